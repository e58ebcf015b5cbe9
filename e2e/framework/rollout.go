package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
)

// TemplateHashes returns, per clique name, the pod template hash the design
// gives the clique's pods and PodCliques (label grove.io/pod-template-hash):
// the generation hash of that clique's template alone.
func TemplateHashes(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	hashes := map[string]string{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			hashes[clique.Name] = generationhash.Hash(generationhash.Clique(pcs, clique))
		}
	}
	return hashes
}

// RolloutSample is the state of a PodCliqueSet after one event of its pods,
// PodCliques or itself, computed from those objects and its spec alone
// (never from the status the controllers write, so that it can disagree
// with them).
type RolloutSample struct {
	At time.Time
	// Unavailable are the replicas below spec.replicas that were available
	// in an earlier sample (or this one) and are not now. A replica is
	// available when every standalone clique has at least minAvailable
	// Ready pods not being deleted, and every scaling group has at least
	// its minAvailable group replicas whose cliques all have that.
	// Replicas never seen available (still starting after a scale-out, or
	// down before sampling began) are not counted.
	Unavailable []int
	// Replacing are the replicas whose pods are being replaced: from a
	// sample where a replica has live pods of an outdated template, and
	// missing pods or, in a clique with outdated pods, pods of the current
	// template, until it has all its pods again (as many as its PodCliques'
	// replicas), all of the current template. A pod being deleted counts as
	// missing. Current means the hash of its clique's template in the spec
	// as last seen.
	Replacing []int
	// MostDisruptedGroupReplicas is, over every PodCliqueScalingGroup, the
	// most group replicas of one group that lack a Ready pod at once.
	MostDisruptedGroupReplicas int
	// CurrentlyUpdating is status.updateProgress.currentlyUpdating.
	CurrentlyUpdating []int32
}

// PodSighting is the first time a sampler saw a pod.
type PodSighting struct {
	Name      string
	Replica   int
	Clique    string
	Hash      string
	FirstSeen time.Time
	// Current: its hash was its clique's template hash in the spec as last
	// seen.
	Current bool
}

// Interval is a run of consecutive samples.
type Interval struct{ From, To time.Time }

// RolloutSampler watches a PodCliqueSet, its PodCliques and its pods, and
// takes a sample after every event it receives, so that no state the API
// server went through is skipped: a gang deleted and recreated within a
// fraction of a second, as simulated nodes allow, is seen as it happened.
// Each kind's events arrive in the API server's order; the kinds are merged
// in the order their events arrive. It keeps watching through operator
// restarts: it talks only to the API server.
type RolloutSampler struct {
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu sync.Mutex
	// recording: the watches have delivered what existed when they began,
	// so a sample shows a whole state; false again once stopped.
	recording bool
	pcs       *copsev1alpha1.PodCliqueSet
	pclqs     map[types.UID]*copsev1alpha1.PodClique
	livePods  map[types.UID]*corev1.Pod

	samples       []RolloutSample
	everAvailable map[int]bool
	replacing     map[int]bool
	pods          map[types.UID]PodSighting
}

// samplerSyncTimeout bounds the wait for the sampler's watches to deliver
// the objects that exist when it starts.
const samplerSyncTimeout = 30 * time.Second

// StartRolloutSampler starts watching the PodCliqueSet namespace/name and
// returns once the first sample, of every object that exists, is taken.
// Stop it (DeferCleanup(s.Stop) is safe: Stop may be called more than once)
// before reading its record.
func (e *Env) StartRolloutSampler(ctx context.Context, namespace, name string) (*RolloutSampler, error) {
	byPartOf := ctrlcache.ByObject{Label: k8slabels.SelectorFromSet(k8slabels.Set{labels.PartOfKey: name})}
	c, err := ctrlcache.New(e.Cluster.RESTConfig(), ctrlcache.Options{
		Scheme:            Scheme(),
		DefaultNamespaces: map[string]ctrlcache.Config{namespace: {}},
		ByObject: map[client.Object]ctrlcache.ByObject{
			&copsev1alpha1.PodCliqueSet{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
			&copsev1alpha1.PodClique{}:    byPartOf,
			&corev1.Pod{}:                 byPartOf,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rollout sampler for %s/%s: cache: %w", namespace, name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &RolloutSampler{
		cancel: cancel, done: make(chan struct{}),
		pclqs: map[types.UID]*copsev1alpha1.PodClique{}, livePods: map[types.UID]*corev1.Pod{},
		everAvailable: map[int]bool{}, replacing: map[int]bool{}, pods: map[types.UID]PodSighting{},
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.observe(obj, false) },
		UpdateFunc: func(_, obj any) { s.observe(obj, false) },
		DeleteFunc: func(obj any) { s.observe(obj, true) },
	}
	// synced: each handler has been given what existed when its watch began.
	var synced []toolscache.InformerSynced
	for _, obj := range []client.Object{&copsev1alpha1.PodCliqueSet{}, &copsev1alpha1.PodClique{}, &corev1.Pod{}} {
		informer, err := c.GetInformer(ctx, obj)
		if err == nil {
			var registration toolscache.ResourceEventHandlerRegistration
			registration, err = informer.AddEventHandler(handler)
			if registration != nil {
				synced = append(synced, registration.HasSynced)
			}
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("rollout sampler for %s/%s: watch %T: %w", namespace, name, obj, err)
		}
	}
	go func() {
		defer close(s.done)
		_ = c.Start(ctx)
	}()
	syncCtx, cancelSync := context.WithTimeout(ctx, samplerSyncTimeout)
	defer cancelSync()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), synced...) {
		s.Stop()
		return nil, fmt.Errorf("rollout sampler for %s/%s: watches not synced within %s", namespace, name, samplerSyncTimeout)
	}
	s.mu.Lock()
	found := s.pcs != nil
	if found {
		s.recording = true
		s.sample()
	}
	s.mu.Unlock()
	if !found {
		s.Stop()
		return nil, fmt.Errorf("rollout sampler: PodCliqueSet %s/%s not found", namespace, name)
	}
	return s, nil
}

// Stop ends the watches and returns what was recorded.
func (s *RolloutSampler) Stop() *RolloutRecord {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.mu.Lock()
		s.recording = false
		s.mu.Unlock()
	})
	return s.Record()
}

// Record returns what was recorded so far (the sampler may still run).
func (s *RolloutSampler) Record() *RolloutRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &RolloutRecord{Samples: slices.Clone(s.samples), Pods: map[types.UID]PodSighting{}}
	for uid, p := range s.pods {
		rec.Pods[uid] = p
	}
	return rec
}

// observe applies one event to the state the sampler keeps, and samples
// it.
func (s *RolloutSampler) observe(obj any, deleted bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = tombstone.Obj, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch o := obj.(type) {
	case *copsev1alpha1.PodCliqueSet:
		s.pcs = o
		if deleted {
			s.pcs = nil
		}
	case *copsev1alpha1.PodClique:
		s.pclqs[o.UID] = o
		if deleted {
			delete(s.pclqs, o.UID)
		}
	case *corev1.Pod:
		s.livePods[o.UID] = o
		if deleted {
			delete(s.livePods, o.UID)
		}
	default:
		return
	}
	if s.recording && s.pcs != nil {
		s.sample()
	}
}

// sample records the state as it is now. Callers hold s.mu.
func (s *RolloutSampler) sample() {
	at := time.Now()
	pclqs := make([]copsev1alpha1.PodClique, 0, len(s.pclqs))
	for _, pclq := range s.pclqs {
		pclqs = append(pclqs, *pclq)
	}
	pods := make([]corev1.Pod, 0, len(s.livePods))
	for _, pod := range s.livePods {
		pods = append(pods, *pod)
	}
	sum := summarize(s.pcs, pclqs, pods)

	hashes := TemplateHashes(s.pcs)
	for i := range pods {
		pod := &pods[i]
		if _, seen := s.pods[pod.UID]; seen {
			continue
		}
		r, _ := labels.Index(pod.Labels, labels.ReplicaKey)
		clique, hash := pod.Labels[labels.CliqueTemplateKey], pod.Labels[labels.PodTemplateHashKey]
		s.pods[pod.UID] = PodSighting{Name: pod.Name, Replica: r, Clique: clique, Hash: hash, FirstSeen: at, Current: hash != "" && hash == hashes[clique]}
	}
	smp := RolloutSample{At: at, Replacing: stillReplacing(s.replacing, sum), MostDisruptedGroupReplicas: sum.mostDisruptedGroupReplicas}
	if s.pcs.Status.UpdateProgress != nil {
		for _, u := range s.pcs.Status.UpdateProgress.CurrentlyUpdating {
			smp.CurrentlyUpdating = append(smp.CurrentlyUpdating, u.ReplicaIndex)
		}
	}
	for r := 0; r < int(s.pcs.Spec.Replicas); r++ {
		if sum.available[r] {
			s.everAvailable[r] = true
		} else if s.everAvailable[r] {
			smp.Unavailable = append(smp.Unavailable, r)
		}
	}
	s.samples = append(s.samples, smp)
}

// groupKey names one group replica of one PodCliqueScalingGroup object.
type groupKey struct {
	pcsg         string
	groupReplica int
}

// tally counts the pods of one replica or of one group replica: expected
// (the sum of its PodCliques' replicas), live ones of the current and of an
// outdated template, in all and per clique, and Ready ones per clique.
type tally struct {
	expected, current, outdated, ready int
	currentByClique, outdatedByClique  map[string]int
	readyByClique                      map[string]int
}

func newTally() *tally {
	return &tally{currentByClique: map[string]int{}, outdatedByClique: map[string]int{}, readyByClique: map[string]int{}}
}

// replacing: the pods counted are being replaced: some are outdated, and
// others are missing or, in the same clique, of the current template. (A
// clique whose template did not change has current pods next to the
// outdated pods of another clique from the start: that is no replacement.)
func (t *tally) replacing() bool {
	if t.outdated == 0 {
		return false
	}
	if t.expected > t.current+t.outdated {
		return true
	}
	for clique, n := range t.outdatedByClique {
		if n > 0 && t.currentByClique[clique] > 0 {
			return true
		}
	}
	return false
}

// stillReplacing updates the replicas being replaced (see
// RolloutSample.Replacing) with a new summary and returns them, ascending:
// those the summary sees starting or going on, and those seen before that
// are not complete yet.
func stillReplacing(replacing map[int]bool, sum summary) []int {
	for _, r := range sum.replacing {
		replacing[r] = true
	}
	var out []int
	for r := range replacing {
		if sum.complete[r] && !slices.Contains(sum.replacing, r) {
			delete(replacing, r)
			continue
		}
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// summary is what one look at a PodCliqueSet's objects shows.
type summary struct {
	// available: per replica below spec.replicas, the availability rule of
	// RolloutSample.Unavailable.
	available map[int]bool
	// replacing: the replicas starting or going on being replaced (see
	// RolloutSample.Replacing), ascending.
	replacing []int
	// complete: per replica seen, it has all its pods, live and of the
	// current template.
	complete map[int]bool
	// mostDisruptedGroupReplicas: as RolloutSample.MostDisruptedGroupReplicas.
	mostDisruptedGroupReplicas int
}

// summarize computes a summary from the PodCliqueSet's spec, its PodCliques
// and its pods alone.
func summarize(pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique, pods []corev1.Pod) summary {
	hashes := TemplateHashes(pcs)
	groupOf := map[string]int{} // clique name -> index in PodCliqueScalingGroupConfigs
	for i, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, clique := range group.CliqueNames {
			groupOf[clique] = i
		}
	}
	replicas := map[int]*tally{}            // per PodCliqueSet replica
	groups := map[int]map[groupKey]*tally{} // per replica, per group replica
	groupTemplate := map[groupKey]int{}     // group replica -> its group's index
	ofReplica := func(r int) *tally {
		if replicas[r] == nil {
			replicas[r] = newTally()
		}
		return replicas[r]
	}
	ofGroupReplica := func(r int, k groupKey) *tally {
		if groups[r] == nil {
			groups[r] = map[groupKey]*tally{}
		}
		if groups[r][k] == nil {
			groups[r][k] = newTally()
		}
		return groups[r][k]
	}
	for i := range pclqs {
		pclq := &pclqs[i]
		r, ok := labels.Index(pclq.Labels, labels.ReplicaKey)
		if !ok || !pclq.DeletionTimestamp.IsZero() {
			continue
		}
		ofReplica(r).expected += int(pclq.Spec.Replicas)
		if pcsg := pclq.Labels[labels.ScalingGroupKey]; pcsg != "" {
			j, _ := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
			k := groupKey{pcsg, j}
			ofGroupReplica(r, k).expected += int(pclq.Spec.Replicas)
			groupTemplate[k] = groupOf[pclq.Labels[labels.CliqueTemplateKey]]
		}
	}
	for i := range pods {
		pod := &pods[i]
		r, ok := labels.Index(pod.Labels, labels.ReplicaKey)
		if !ok || !pod.DeletionTimestamp.IsZero() || IsTerminal(pod) {
			continue // a pod on its way out is missing, not outdated
		}
		clique := pod.Labels[labels.CliqueTemplateKey]
		hash := pod.Labels[labels.PodTemplateHashKey]
		counts := []*tally{ofReplica(r)}
		if pcsg := pod.Labels[labels.ScalingGroupKey]; pcsg != "" {
			j, _ := labels.Index(pod.Labels, labels.ScalingGroupReplicaKey)
			k := groupKey{pcsg, j}
			counts = append(counts, ofGroupReplica(r, k))
			groupTemplate[k] = groupOf[clique]
		}
		for _, t := range counts {
			if hash != "" && hash == hashes[clique] {
				t.current++
				t.currentByClique[clique]++
			} else {
				t.outdated++
				t.outdatedByClique[clique]++
			}
			if IsReady(pod) {
				t.ready++
				t.readyByClique[clique]++
			}
		}
	}

	sum := summary{available: map[int]bool{}, complete: map[int]bool{}}
	for r := 0; r < int(pcs.Spec.Replicas); r++ {
		sum.available[r] = available(pcs, ofReplica(r), groups[r], groupTemplate)
	}
	for r, t := range replicas {
		if t.replacing() {
			sum.replacing = append(sum.replacing, r)
		}
		sum.complete[r] = t.outdated == 0 && t.current >= t.expected
	}
	sort.Ints(sum.replacing)
	for _, perGroup := range groups {
		disrupted := map[string]int{}
		for k, t := range perGroup {
			if t.ready < t.expected {
				disrupted[k.pcsg]++
			}
		}
		for _, n := range disrupted {
			sum.mostDisruptedGroupReplicas = max(sum.mostDisruptedGroupReplicas, n)
		}
	}
	return sum
}

// available applies the availability rule of RolloutSample.Unavailable to
// one replica's counts.
func available(pcs *copsev1alpha1.PodCliqueSet, replica *tally, groupReplicas map[groupKey]*tally, groupTemplate map[groupKey]int) bool {
	grouped := pcs.GroupedCliqueNames()
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil || grouped[clique.Name] {
			continue
		}
		if replica.readyByClique[clique.Name] < int(copsev1alpha1.CliqueMinAvailable(clique.Spec)) {
			return false
		}
	}
	availableGroupReplicas := map[int]int{}
	for k, t := range groupReplicas {
		group := pcs.Spec.Template.PodCliqueScalingGroupConfigs[groupTemplate[k]]
		ok := true
		for _, name := range group.CliqueNames {
			clique := pcs.CliqueTemplate(name)
			if clique == nil || t.readyByClique[name] < int(copsev1alpha1.CliqueMinAvailable(clique.Spec)) {
				ok = false
			}
		}
		if ok {
			availableGroupReplicas[groupTemplate[k]]++
		}
	}
	for i, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if availableGroupReplicas[i] < int(copsev1alpha1.ScalingGroupMinAvailable(group)) {
			return false
		}
	}
	return true
}

// RolloutRecord is what a RolloutSampler saw.
type RolloutRecord struct {
	Samples []RolloutSample
	// Pods is every pod seen, by UID, as first seen.
	Pods map[types.UID]PodSighting
}

// MostUnavailable is the largest number of replicas unavailable at once.
func (r *RolloutRecord) MostUnavailable() int {
	most := 0
	for _, s := range r.Samples {
		most = max(most, len(s.Unavailable))
	}
	return most
}

// SamplesWithUnavailable counts the samples with at least one unavailable
// replica: a rollout that replaces pods leaves some, so zero means the
// sampler could not have seen a violation either.
func (r *RolloutRecord) SamplesWithUnavailable() int {
	n := 0
	for _, s := range r.Samples {
		if len(s.Unavailable) > 0 {
			n++
		}
	}
	return n
}

// MostDisruptedGroupReplicas is the most group replicas of one scaling
// group lacking a Ready pod at once.
func (r *RolloutRecord) MostDisruptedGroupReplicas() int {
	most := 0
	for _, s := range r.Samples {
		most = max(most, s.MostDisruptedGroupReplicas)
	}
	return most
}

// ReplacementIntervals returns, per replica, the runs of samples in which
// it was being replaced (RolloutSample.Replacing).
func (r *RolloutRecord) ReplacementIntervals() map[int][]Interval {
	out := map[int][]Interval{}
	open := map[int]bool{}
	for _, s := range r.Samples {
		now := map[int]bool{}
		for _, replica := range s.Replacing {
			now[replica] = true
			runs := out[replica]
			if open[replica] {
				runs[len(runs)-1].To = s.At
			} else {
				out[replica] = append(runs, Interval{From: s.At, To: s.At})
			}
		}
		open = now
	}
	return out
}

// OverlappingReplacements describes the samples in which more than one
// replica was being replaced; empty when the replicas were replaced one at
// a time.
func (r *RolloutRecord) OverlappingReplacements() []string {
	var out []string
	for _, s := range r.Samples {
		if len(s.Replacing) > 1 {
			out = append(out, fmt.Sprintf("%s: replicas %v replaced at once", s.At.Format("15:04:05.000"), s.Replacing))
		}
	}
	return out
}

// ReplacementOrder lists the replicas in the order they started being
// replaced (each once, at its first interval).
func (r *RolloutRecord) ReplacementOrder() []int {
	var order []int
	for _, s := range r.Samples {
		for _, replica := range s.Replacing {
			if !slices.Contains(order, replica) {
				order = append(order, replica)
			}
		}
	}
	return order
}

// Timeline lists the samples at which something the record tracks changed,
// one line each, for failure messages.
func (r *RolloutRecord) Timeline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples\n", len(r.Samples))
	last := ""
	for _, s := range r.Samples {
		line := fmt.Sprintf("unavailable=%v replacing=%v disruptedGroupReplicas=%d currentlyUpdating=%v",
			s.Unavailable, s.Replacing, s.MostDisruptedGroupReplicas, s.CurrentlyUpdating)
		if line != last {
			fmt.Fprintf(&b, "%s %s\n", s.At.Format("15:04:05.000"), line)
			last = line
		}
	}
	return b.String()
}
