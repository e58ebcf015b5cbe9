package expectations

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const key = "ns/clique"

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"index": name},
	}}
}

func uids(names ...string) []types.UID {
	out := make([]types.UID, 0, len(names))
	for _, n := range names {
		out = append(out, types.UID("uid-"+n))
	}
	return out
}

func names(es []Expected) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func TestSync(t *testing.T) {
	cases := []struct {
		name          string
		created       []string
		deleted       []string
		present       []string
		terminating   []string
		wantCreations []string
		wantDeletions []string
	}{
		{
			name:          "creations not yet in the cache stay pending",
			created:       []string{"a", "b"},
			wantCreations: []string{"a", "b"},
			wantDeletions: []string{},
		},
		{
			name:          "a creation the cache shows is confirmed",
			created:       []string{"a", "b"},
			present:       []string{"a"},
			wantCreations: []string{"b"},
			wantDeletions: []string{},
		},
		{
			name:          "a creation that is already terminating is confirmed too",
			created:       []string{"a"},
			present:       []string{"a"},
			terminating:   []string{"a"},
			wantCreations: []string{},
			wantDeletions: []string{},
		},
		{
			name:          "a deletion whose object the cache still shows alive stays pending",
			deleted:       []string{"a"},
			present:       []string{"a", "b"},
			wantCreations: []string{},
			wantDeletions: []string{"a"},
		},
		{
			name:          "a deletion whose object is terminating is confirmed",
			deleted:       []string{"a"},
			present:       []string{"a"},
			terminating:   []string{"a"},
			wantCreations: []string{},
			wantDeletions: []string{},
		},
		{
			name:          "a deletion whose object is gone is confirmed",
			deleted:       []string{"a", "b"},
			present:       []string{"b"},
			wantCreations: []string{},
			wantDeletions: []string{"b"},
		},
		{
			name:          "deleting an object still expected to appear cancels the creation",
			created:       []string{"a"},
			deleted:       []string{"a"},
			wantCreations: []string{},
			wantDeletions: []string{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{})
			for _, n := range c.created {
				s.ExpectCreations(key, pod(n))
			}
			for _, n := range c.deleted {
				s.ExpectDeletions(key, pod(n))
			}
			got := s.Sync(key, uids(c.present...), uids(c.terminating...))
			if diff := cmp.Diff(c.wantCreations, names(got.Creations)); diff != "" {
				t.Errorf("creations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantDeletions, names(got.Deletions)); diff != "" {
				t.Errorf("deletions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, s.Pending(key)); diff != "" {
				t.Errorf("Pending differs from what Sync returned (-sync +pending):\n%s", diff)
			}
		})
	}
}

func TestPendingKeepsWhatTheControllerNeedsToKnow(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Clock: clock})
	p := pod("a")
	s.ExpectCreations(key, p)
	p.Labels["index"] = "mutated after recording"

	got := s.Sync(key, nil, nil)
	want := []Expected{{UID: "uid-a", Name: "a", Labels: map[string]string{"index": "a"}, Since: clock.Now()}}
	if diff := cmp.Diff(want, got.Creations); diff != "" {
		t.Fatalf("creations (-want +got):\n%s", diff)
	}
	got.Creations[0].Labels["index"] = "mutated in a snapshot"
	if l := s.Pending(key).Creations[0].Labels["index"]; l != "a" {
		t.Errorf("a snapshot shares its labels with the store: got %q", l)
	}
}

func TestRecordedForAnotherOwner(t *testing.T) {
	owned := func(name string, owner types.UID) *corev1.Pod {
		p := pod(name)
		p.OwnerReferences = []metav1.OwnerReference{{Name: "clique", UID: owner, Controller: ptr.To(true)}}
		return p
	}
	cases := []struct {
		name    string
		created []*corev1.Pod
		deleted []*corev1.Pod
		want    bool
	}{
		{name: "nothing pending"},
		{name: "the current owner's creations", created: []*corev1.Pod{owned("a", "now")}},
		{name: "an earlier owner's creation", created: []*corev1.Pod{owned("a", "now"), owned("b", "before")}, want: true},
		{name: "an earlier owner's deletion", deleted: []*corev1.Pod{owned("a", "before")}, want: true},
		{name: "objects without a controller belong to no one", created: []*corev1.Pod{pod("a")}, deleted: []*corev1.Pod{pod("b")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{})
			for _, p := range c.created {
				s.ExpectCreations(key, p)
			}
			for _, p := range c.deleted {
				s.ExpectDeletions(key, p)
			}
			pending := s.Pending(key)
			if got := pending.RecordedForAnotherOwner("now"); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if pending.Empty() != (len(c.created)+len(c.deleted) == 0) {
				t.Errorf("Empty() = %v with %d pending", pending.Empty(), len(c.created)+len(c.deleted))
			}
		})
	}
}

func TestDeleting(t *testing.T) {
	s := New(Options{})
	s.ExpectDeletions(key, pod("a"))
	p := s.Sync(key, uids("a", "b"), nil)
	if !p.Deleting("uid-a") {
		t.Error("Deleting(a) = false, want true")
	}
	if p.Deleting("uid-b") {
		t.Error("Deleting(b) = true, want false")
	}
}

func TestOwnersAreIndependent(t *testing.T) {
	s := New(Options{})
	s.ExpectCreations("ns/one", pod("a"))
	s.ExpectCreations("ns/two", pod("b"))
	s.Sync("ns/one", uids("a"), nil)
	if got := names(s.Pending("ns/two").Creations); !cmp.Equal(got, []string{"b"}) {
		t.Errorf("ns/two creations = %v, want [b]", got)
	}
	s.Forget("ns/two")
	if got := s.Pending("ns/two"); len(got.Creations)+len(got.Deletions) != 0 {
		t.Errorf("Forget left %+v", got)
	}
}

func TestConfirmedOwnersAreRemoved(t *testing.T) {
	s := New(Options{})
	s.ExpectCreations(key, pod("a"))
	s.ExpectDeletions(key, pod("b"))
	s.Sync(key, uids("a"), nil)
	if n := len(s.owners); n != 0 {
		t.Errorf("store still holds %d owners after every expectation was confirmed", n)
	}
}

func TestObjectsWithoutUIDAreNotRecorded(t *testing.T) {
	s := New(Options{})
	noUID := pod("a")
	noUID.UID = ""
	s.ExpectCreations(key, noUID)
	if got := s.Pending(key).Creations; len(got) != 0 {
		t.Errorf("recorded %v", got)
	}
}

func TestExpiry(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	s := New(Options{TTL: time.Minute, Clock: clock, Logger: logger})

	s.ExpectCreations(key, pod("old-create"))
	s.ExpectDeletions(key, pod("old-delete"))
	clock.SetTime(start.Add(30 * time.Second))
	s.ExpectCreations(key, pod("new-create"))

	clock.SetTime(start.Add(59 * time.Second))
	p := s.Sync(key, uids("old-delete"), nil)
	if got := names(p.Creations); !cmp.Equal(got, []string{"new-create", "old-create"}) {
		t.Fatalf("before the TTL: creations %v", got)
	}
	if len(logged) != 0 {
		t.Fatalf("logged before anything expired: %v", logged)
	}

	clock.SetTime(start.Add(60 * time.Second))
	p = s.Sync(key, uids("old-delete"), nil)
	if got := names(p.Creations); !cmp.Equal(got, []string{"new-create"}) {
		t.Errorf("after the TTL: creations %v, want [new-create]", got)
	}
	if len(p.Deletions) != 0 {
		t.Errorf("after the TTL: deletions %v, want none", names(p.Deletions))
	}
	if len(logged) != 2 {
		t.Fatalf("want one log line per expired expectation, got %d: %v", len(logged), logged)
	}
	for _, line := range logged {
		if !strings.Contains(line, key) || !strings.Contains(line, "old-") {
			t.Errorf("log line does not name the owner and the object: %s", line)
		}
	}
}

func TestDefaultTTL(t *testing.T) {
	if got := New(Options{}).ttl; got != DefaultTTL {
		t.Errorf("ttl = %v, want %v", got, DefaultTTL)
	}
}

func TestKey(t *testing.T) {
	if got := Key("ns", "a"); got != "ns/a" {
		t.Errorf("Key = %q", got)
	}
}

// TestConcurrentUse is meant for `go test -race`: writers of one owner and
// syncs of several owners run at once.
func TestConcurrentUse(t *testing.T) {
	s := New(Options{})
	var wg sync.WaitGroup
	for owner := range 4 {
		k := fmt.Sprintf("ns/%d", owner)
		for w := range 8 {
			wg.Go(func() {
				for i := range 50 {
					p := pod(fmt.Sprintf("%d-%d-%d", owner, w, i))
					s.ExpectCreations(k, p)
					s.ExpectDeletions(k, p)
					s.Sync(k, []types.UID{p.UID}, nil)
					_ = s.Pending(k)
				}
			})
		}
	}
	wg.Wait()
	for owner := range 4 {
		k := fmt.Sprintf("ns/%d", owner)
		if p := s.Sync(k, nil, nil); len(p.Creations)+len(p.Deletions) != 0 {
			t.Errorf("%s: %d creations, %d deletions left", k, len(p.Creations), len(p.Deletions))
		}
	}
}
