// Package expectations remembers a controller's own writes that its informer
// cache has not reflected yet, so that a reconcile working from a lagging
// cache neither creates an object twice nor deletes one twice.
//
// The pattern is Kubernetes' controller expectations, reshaped around one
// idea: the cache listing the controller already does on every reconcile is
// the only evidence needed. There are no event-handler hooks and no counters
// to raise and lower; a reconcile hands the UIDs it sees to Sync, which drops
// every expectation the cache now confirms and returns the rest. The decision
// then treats pending creations as existing and pending deletions as gone.
//
// It is an in-memory record of in-flight writes only. After an operator
// restart it starts empty and the freshly synced cache is authoritative, so
// nothing in it has to survive the process. An expectation the cache never
// confirms (a lost watch event, an object deleted by someone else before the
// cache saw it) expires after the store's TTL and is logged, so it can delay
// work but never block it.
//
// WrittenVersions does the same for status writes: the resourceVersion a
// controller last wrote to an object, so that a pass working from a cache
// that has not caught up with it does not decide from the older status.
package expectations

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultTTL bounds how long an unconfirmed expectation is honoured. Watch
// events normally arrive within seconds; five minutes covers a slow API server
// without letting a lost event stall a controller for long.
const DefaultTTL = 5 * time.Minute

// Options configure a Store. The zero value is usable.
type Options struct {
	// TTL is how long an expectation lives without being confirmed by the
	// cache. Zero means DefaultTTL.
	TTL time.Duration
	// Clock is the time source; tests substitute a fake one.
	Clock clock.PassiveClock
	// Logger receives a message for every expectation that expires.
	Logger logr.Logger
}

// Store holds the pending expectations of every owner, keyed by Key(owner).
// It is safe for concurrent use by reconcilers of different owners, and by
// the concurrent writes within one reconcile.
type Store struct {
	ttl   time.Duration
	clock clock.PassiveClock
	log   logr.Logger

	mu     sync.Mutex
	owners map[string]*ownerWrites
}

// ownerWrites are the unconfirmed writes on the objects of one owner.
type ownerWrites struct {
	creations map[types.UID]Expected
	deletions map[types.UID]Expected
}

func (w *ownerWrites) empty() bool { return len(w.creations) == 0 && len(w.deletions) == 0 }

// Expected is one create or delete the cache has not confirmed yet. Name and
// Labels are kept because a created object is invisible until confirmed, yet
// the controller must know what it occupies (a pod's index, for example).
type Expected struct {
	UID    types.UID
	Name   string
	Labels map[string]string
	// Controller is the UID of the object's controller owner reference, if
	// any. It tells expectations recorded for an earlier owner of the same
	// name apart from the current owner's.
	Controller types.UID
	// Since is when the write was recorded; the expectation expires TTL later.
	Since time.Time
}

// Pending is a snapshot of one owner's unconfirmed writes, sorted by name.
type Pending struct {
	Creations []Expected
	Deletions []Expected
}

// Deleting reports whether uid has a pending deletion: the controller deleted
// it, and the cache still shows it alive.
func (p Pending) Deleting(uid types.UID) bool {
	return slices.ContainsFunc(p.Deletions, func(e Expected) bool { return e.UID == uid })
}

// Empty reports whether nothing is pending.
func (p Pending) Empty() bool {
	return len(p.Creations) == 0 && len(p.Deletions) == 0
}

// RecordedForAnotherOwner reports whether an expectation concerns an object
// controlled by something other than owner. That happens when the owner was
// deleted and recreated under the same name before the controller saw it
// gone: the old owner's expectations can never be confirmed through the new
// owner's objects and must be forgotten, or they would hold the new owner
// back until they expire.
func (p Pending) RecordedForAnotherOwner(owner types.UID) bool {
	foreign := func(e Expected) bool { return e.Controller != "" && e.Controller != owner }
	return slices.ContainsFunc(p.Creations, foreign) || slices.ContainsFunc(p.Deletions, foreign)
}

// New returns an empty store.
func New(opts Options) *Store {
	s := &Store{ttl: opts.TTL, clock: opts.Clock, log: opts.Logger, owners: map[string]*ownerWrites{}}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s
}

// Key is the store key of an owner: "namespace/name", the same string as a
// reconcile request's NamespacedName, so a reconciler can compute it before
// (and without) reading the owner.
func Key(namespace, name string) string {
	return namespace + "/" + name
}

// Expect records, in one call, the objects the controller just created and
// those it just deleted (ExpectCreations, ExpectDeletions).
func (s *Store) Expect(key string, created, deleted []metav1.Object) {
	if len(created) > 0 {
		s.ExpectCreations(key, created...)
	}
	if len(deleted) > 0 {
		s.ExpectDeletions(key, deleted...)
	}
}

// ExpectCreations records objects the controller just created. Call it after
// each successful Create, with the object the API server returned (it carries
// the UID).
func (s *Store) ExpectCreations(key string, created ...metav1.Object) {
	s.record(key, created, func(w *ownerWrites, e Expected) {
		w.creations[e.UID] = e
	})
}

// ExpectDeletions records objects the controller just deleted (or found
// already gone). A deletion supersedes a pending creation of the same object.
func (s *Store) ExpectDeletions(key string, deleted ...metav1.Object) {
	s.record(key, deleted, func(w *ownerWrites, e Expected) {
		delete(w.creations, e.UID)
		w.deletions[e.UID] = e
	})
}

func (s *Store) record(key string, objs []metav1.Object, add func(*ownerWrites, Expected)) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.owners[key]
	if w == nil {
		w = &ownerWrites{creations: map[types.UID]Expected{}, deletions: map[types.UID]Expected{}}
		s.owners[key] = w
	}
	for _, obj := range objs {
		if obj.GetUID() == "" {
			// Without a UID the cache can never confirm it; holding it would
			// only delay work until it expires.
			s.log.Info("ignoring expectation for an object without UID", "key", key, "object", obj.GetName())
			continue
		}
		e := Expected{UID: obj.GetUID(), Name: obj.GetName(), Labels: maps.Clone(obj.GetLabels()), Since: now}
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			e.Controller = ref.UID
		}
		add(w, e)
	}
}

// Sync reconciles the owner's expectations with what the cache shows and
// returns those still pending.
//
// present are the UIDs of every object of the owner that the cache lists,
// terminating or not; terminating are those among them with a deletion
// timestamp. A creation is confirmed once its UID is present. A deletion is
// confirmed once its UID is absent or terminating. Expectations older than
// the TTL are dropped and logged.
func (s *Store) Sync(key string, present, terminating []types.UID) Pending {
	presentSet := toSet(present)
	terminatingSet := toSet(terminating)
	now := s.clock.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.owners[key]
	if w == nil {
		return Pending{}
	}
	for uid, e := range w.creations {
		if _, seen := presentSet[uid]; seen {
			delete(w.creations, uid)
		} else if s.expired(e, now) {
			delete(w.creations, uid)
			s.logExpired(key, "creation", e, now)
		}
	}
	for uid, e := range w.deletions {
		_, stillThere := presentSet[uid]
		_, going := terminatingSet[uid]
		if !stillThere || going {
			delete(w.deletions, uid)
		} else if s.expired(e, now) {
			delete(w.deletions, uid)
			s.logExpired(key, "deletion", e, now)
		}
	}
	if w.empty() {
		delete(s.owners, key)
		return Pending{}
	}
	return w.snapshot()
}

// Pending returns the owner's unconfirmed writes without syncing them.
func (s *Store) Pending(key string) Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.owners[key]; w != nil {
		return w.snapshot()
	}
	return Pending{}
}

// Forget drops every expectation of an owner, for when the owner is gone.
func (s *Store) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owners, key)
}

func (s *Store) expired(e Expected, now time.Time) bool {
	return now.Sub(e.Since) >= s.ttl
}

func (s *Store) logExpired(key, kind string, e Expected, now time.Time) {
	s.log.Info("expectation expired before the cache confirmed it; a watch event was probably lost",
		"key", key, "expectation", kind, "object", e.Name, "uid", e.UID, "age", now.Sub(e.Since).Round(time.Second))
}

func (w *ownerWrites) snapshot() Pending {
	return Pending{Creations: sortedCopy(w.creations), Deletions: sortedCopy(w.deletions)}
}

func sortedCopy(m map[types.UID]Expected) []Expected {
	if len(m) == 0 {
		return nil
	}
	out := make([]Expected, 0, len(m))
	for _, e := range m {
		e.Labels = maps.Clone(e.Labels)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Expected) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.UID), string(b.UID))
	})
	return out
}

func toSet(uids []types.UID) map[types.UID]struct{} {
	set := make(map[types.UID]struct{}, len(uids))
	for _, uid := range uids {
		set[uid] = struct{}{}
	}
	return set
}
