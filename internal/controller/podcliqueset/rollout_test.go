package podcliqueset

import (
	"slices"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/topology"
)

var rolloutNow = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// gangState builds a clique of a replica: state is "old" (its pod runs the
// old template, ready), "new" (new template, ready), "starting" (new
// template, not ready yet), "stale" (the PodClique has not taken the
// template yet; its pod is old) or "broken" (old template, not ready).
func rc(name, gang string, base bool, groupReplica int, state string) rolloutClique {
	c := rolloutClique{name: name, gang: gang, base: base, group: "decode", groupReplica: groupReplica, minAvailable: 1, specCurrent: true}
	pod := podstate.Summary{Name: name + "-pod"}
	switch state {
	case "old":
		c.ready, c.oldPods = 1, []podstate.Summary{pod}
	case "new":
		c.ready, c.readyUpdated = 1, 1
	case "starting":
	case "stale":
		c.specCurrent, c.ready, c.oldPods = false, 1, []podstate.Summary{pod}
	case "broken":
		c.oldPods = []podstate.Summary{pod}
	}
	return c
}

// replica r: a standalone frontend and decode group replica 0 in the base
// gang, decode group replicas 1 and 2 in gangs of their own.
func rr(index int, frontend, group0, group1, group2 string) rolloutReplica {
	p := func(s string) string { return "r" + string(rune('0'+index)) + "-" + s }
	return rolloutReplica{index: index, complete: true, available: true, scheduledPods: 4, cliques: []rolloutClique{
		rc(p("frontend"), p("base"), true, 0, frontend),
		rc(p("decode-0"), p("base"), true, 0, group0),
		rc(p("decode-1"), p("decode-1"), false, 1, group1),
		rc(p("decode-2"), p("decode-2"), false, 2, group2),
	}}
}

func allOld(index int) rolloutReplica { return rr(index, "old", "old", "old", "old") }
func allNew(index int) rolloutReplica { return rr(index, "new", "new", "new", "new") }

func inProgress(replica int, started time.Time) *grovecorev1alpha1.PodCliqueSetUpdateProgress {
	p := &grovecorev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.NewTime(started)}
	if replica >= 0 {
		p.CurrentlyUpdating = []grovecorev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: int32(replica), UpdateStartedAt: metav1.NewTime(started)}}
	}
	return p
}

func TestDecideRollout(t *testing.T) {
	earlier := rolloutNow.Add(-time.Minute)
	tests := []struct {
		name string
		in   rolloutInputs
		// want
		started, completed             bool
		currentlyUpdating              []int
		replicaStarted, replicaUpdated int
		deleted                        []string
		ended                          bool
		noProgress                     bool
		// hash is the hash to record; "" means the computed one.
		hash string
	}{
		{
			name:       "the first pass records the hash and starts nothing",
			in:         rolloutInputs{computedHash: "h1", replicas: []rolloutReplica{allNew(0)}},
			noProgress: true, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "a fresh update picks replica 0 and deletes its base gang at once",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2",
				replicas: []rolloutReplica{allOld(0), allOld(1)}},
			started: true, currentlyUpdating: []int{0}, replicaStarted: 0, replicaUpdated: -1,
			deleted: []string{"r0-frontend-pod", "r0-decode-0-pod"},
		},
		{
			name: "a fresh update waits for the PodCliques to take the template before deleting anything",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2",
				replicas: []rolloutReplica{rr(0, "stale", "old", "old", "old"), allOld(1)}},
			started: true, currentlyUpdating: []int{0}, replicaStarted: 0, replicaUpdated: -1,
		},
		{
			name: "resume after a crash: the recorded replica, its base gang already new, goes on with its first scaling-group gang",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(1, earlier),
				replicas: []rolloutReplica{allOld(0), rr(1, "new", "new", "old", "old")}},
			currentlyUpdating: []int{1}, replicaStarted: -1, replicaUpdated: -1,
			deleted: []string{"r1-decode-1-pod"},
		},
		{
			name: "resume after a crash: a base gang deleted in part is deleted in full",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{rr(0, "starting", "old", "old", "old"), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
			deleted: []string{"r0-decode-0-pod"},
		},
		{
			name: "the base gang is not available with new pods yet: nothing more",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{rr(0, "starting", "new", "old", "old"), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "scaling-group gangs one at a time: the next waits while the previous is not available",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{rr(0, "new", "new", "starting", "old"), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "scaling-group gangs one at a time: the next once the previous is available",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{rr(0, "new", "new", "new", "old"), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
			deleted: []string{"r0-decode-2-pod"},
		},
		{
			name: "a scaling-group gang that is not available is replaced at once",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{rr(0, "new", "new", "old", "broken"), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
			deleted: []string{"r0-decode-2-pod"},
		},
		{
			name: "a replica done is recorded and the next one starts in the same pass",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{allNew(0), allOld(1)}},
			currentlyUpdating: []int{1}, replicaStarted: 1, replicaUpdated: 0,
			deleted: []string{"r1-frontend-pod", "r1-decode-0-pod"},
		},
		{
			name: "a replica with new pods ready that its members do not report available yet is not done",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{func() rolloutReplica { r := allNew(0); r.available = false; return r }(), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "the last replica done ends the update",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(1, earlier),
				replicas: []rolloutReplica{allNew(0), allNew(1)}},
			replicaStarted: -1, replicaUpdated: 1, completed: true, ended: true,
		},
		{
			name: "a replica with no scheduled pods is picked first",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2",
				replicas: []rolloutReplica{allOld(0), allOld(1), func() rolloutReplica { r := allOld(2); r.scheduledPods = 0; return r }()}},
			started: true, currentlyUpdating: []int{2}, replicaStarted: 2, replicaUpdated: -1,
			deleted: []string{"r2-frontend-pod", "r2-decode-0-pod"},
		},
		{
			name: "a breached replica comes before a healthy lower index",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2",
				replicas: []rolloutReplica{allOld(0), func() rolloutReplica { r := allOld(1); r.breached = true; return r }()}},
			started: true, currentlyUpdating: []int{1}, replicaStarted: 1, replicaUpdated: -1,
			deleted: []string{"r1-frontend-pod", "r1-decode-0-pod"},
		},
		{
			name: "a replica being recreated by gang termination is skipped",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2",
				replicas: []rolloutReplica{func() rolloutReplica { r := allOld(0); r.recreating = true; return r }(), allOld(1)}},
			started: true, currentlyUpdating: []int{1}, replicaStarted: 1, replicaUpdated: -1,
			deleted: []string{"r1-frontend-pod", "r1-decode-0-pod"},
		},
		{
			name: "the replica being updated, now being recreated, is left to the recreation",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(0, earlier),
				replicas: []rolloutReplica{func() rolloutReplica { r := allOld(0); r.recreating = true; return r }(), allOld(1)}},
			currentlyUpdating: []int{0}, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "a suspended PodCliqueSet rolls nothing",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2", suspended: true,
				replicas: []rolloutReplica{allOld(0), allOld(1)}},
			started: true, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "OnDelete: the update ends as it starts, and no pod is deleted",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2", onDelete: true,
				replicas: []rolloutReplica{allOld(0), allOld(1)}},
			started: true, ended: true, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "OnDelete: the update starts (and ends) only once every PodClique carries the template",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2", onDelete: true,
				replicas: []rolloutReplica{allOld(0), rr(1, "old", "old", "old", "stale")}},
			hash: "h1", noProgress: true, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "a newer hash mid-rollout keeps the replica being updated and counts afresh",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h3", progress: inProgress(1, earlier),
				replicas: []rolloutReplica{rr(0, "stale", "stale", "stale", "stale"), rr(1, "stale", "stale", "old", "old")}},
			started: true, currentlyUpdating: []int{1}, replicaStarted: -1, replicaUpdated: -1,
		},
		{
			name: "a newer hash after replica 0 was done: replica 0 is updated again once replica 1 is",
			in: rolloutInputs{recordedHash: ptr.To("h3"), computedHash: "h3", progress: inProgress(1, earlier),
				replicas: []rolloutReplica{allOld(0), allNew(1)}},
			currentlyUpdating: []int{0}, replicaStarted: 0, replicaUpdated: 1,
			deleted: []string{"r0-frontend-pod", "r0-decode-0-pod"},
		},
		{
			name: "a scale-in removed the replica being updated: the next one starts",
			in: rolloutInputs{recordedHash: ptr.To("h2"), computedHash: "h2", progress: inProgress(2, earlier),
				replicas: []rolloutReplica{allOld(0), allNew(1)}},
			currentlyUpdating: []int{0}, replicaStarted: 0, replicaUpdated: -1,
			deleted: []string{"r0-frontend-pod", "r0-decode-0-pod"},
		},
		{
			name: "Training never rolls",
			in: rolloutInputs{recordedHash: ptr.To("h1"), computedHash: "h2", training: true,
				replicas: []rolloutReplica{allOld(0)}},
			noProgress: true, replicaStarted: -1, replicaUpdated: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.now = rolloutNow
			d := decideRollout(tt.in)
			wantHash := tt.in.computedHash
			if tt.hash != "" {
				wantHash = tt.hash
			}
			if d.hash != wantHash {
				t.Errorf("hash %q, want %q", d.hash, wantHash)
			}
			if d.started != tt.started || d.completed != tt.completed || d.replicaStarted != tt.replicaStarted || d.replicaUpdated != tt.replicaUpdated {
				t.Errorf("started %v completed %v replicaStarted %d replicaUpdated %d, want %v %v %d %d",
					d.started, d.completed, d.replicaStarted, d.replicaUpdated, tt.started, tt.completed, tt.replicaStarted, tt.replicaUpdated)
			}
			if tt.noProgress {
				if d.progress != nil {
					t.Errorf("progress %+v, want none", d.progress)
				}
				return
			}
			if d.progress == nil {
				t.Fatalf("no progress")
			}
			if tt.started && !d.progress.UpdateStartedAt.Time.Equal(rolloutNow) {
				t.Errorf("updateStartedAt %v, want now", d.progress.UpdateStartedAt)
			}
			if ended := d.progress.UpdateEndedAt != nil; ended != tt.ended {
				t.Errorf("updateEndedAt %v, want ended=%v", d.progress.UpdateEndedAt, tt.ended)
			}
			var current []int
			for _, u := range d.progress.CurrentlyUpdating {
				current = append(current, int(u.ReplicaIndex))
			}
			if !slices.Equal(current, tt.currentlyUpdating) {
				t.Errorf("currentlyUpdating %v, want %v", current, tt.currentlyUpdating)
			}
			var deleted []string
			for _, p := range d.deletePods {
				deleted = append(deleted, p.Name)
			}
			if !slices.Equal(deleted, tt.deleted) {
				t.Errorf("deleted %v, want %v", deleted, tt.deleted)
			}
			if len(deleted) > 0 && (len(current) == 0 || d.deleteReplica != current[0]) {
				t.Errorf("pods of replica %d deleted while currentlyUpdating is %v", d.deleteReplica, current)
			}
		})
	}
}

func TestRolloutEvents(t *testing.T) {
	pcs := testPCSForRollout()
	got := rolloutEvents(pcs, rolloutDecision{hash: "h2", started: true, replicaStarted: 1, replicaUpdated: 0, completed: false})
	var reasons []string
	for _, e := range got {
		reasons = append(reasons, e.Reason)
	}
	want := []string{EventRollingUpdateStarted, EventReplicaUpdated, EventReplicaUpdateStarted}
	if !slices.Equal(reasons, want) {
		t.Errorf("events %v, want %v", reasons, want)
	}
	got = rolloutEvents(pcs, rolloutDecision{hash: "h2", replicaStarted: -1, replicaUpdated: 1, completed: true})
	reasons = nil
	for _, e := range got {
		reasons = append(reasons, e.Reason)
	}
	if want := []string{EventReplicaUpdated, EventRollingUpdateCompleted}; !slices.Equal(reasons, want) {
		t.Errorf("events %v, want %v", reasons, want)
	}
	if got := rolloutEvents(pcs, rolloutDecision{hash: "h2", replicaStarted: -1, replicaUpdated: -1}); len(got) != 0 {
		t.Errorf("a pass that changed nothing reported %v", got)
	}
}

func testPCSForRollout() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.Replicas = 2
	return pcs
}

// TestRolloutReplicasOf checks what a rollout is decided on: which pods are
// old (their hash is not their clique template's), whether a PodClique has
// taken its template, and which gang each clique is in.
func TestRolloutReplicasOf(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}}
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "pcs"}}
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "frontend", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To[int32](1), PodSpec: spec}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1, PodSpec: *spec.DeepCopy()}},
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
	}
	// The PodCliques as built from the old template; then the template changes.
	group := blueprint.ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 0)
	frontend := blueprint.StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, topology.Resolved{})
	worker0 := blueprint.GroupedPodClique(pcs, group, 0, pcs.Spec.Template.Cliques[1], topology.Resolved{})
	worker1 := blueprint.GroupedPodClique(pcs, group, 1, pcs.Spec.Template.Cliques[1], topology.Resolved{})
	oldHash := frontend.Labels[labels.PodTemplateHashKey]
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "app:2"
	newFrontend := blueprint.StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, topology.Resolved{})
	frontend.Labels[labels.PodTemplateHashKey] = newFrontend.Labels[labels.PodTemplateHashKey] // refreshed already
	for _, c := range []*copsev1alpha1.PodClique{frontend, worker0, worker1} {
		c.UID = types.UID(c.Name)
		c.OwnerReferences = []metav1.OwnerReference{{UID: pcs.UID, Controller: ptr.To(true)}}
	}
	pod := func(name string, owner *copsev1alpha1.PodClique, hash string, ready bool) podstate.Summary {
		return podstate.Summary{Name: name, PodClique: owner.Name, ControllerUID: owner.UID, TemplateHash: hash, Ready: ready,
			Phase: corev1.PodRunning, Scheduled: true, Replica: 0}
	}
	obs := (&observed{
		podCliques:    []*copsev1alpha1.PodClique{frontend, worker0, worker1},
		scalingGroups: []*copsev1alpha1.PodCliqueScalingGroup{group},
		pods: []podstate.Summary{
			pod("f-old", frontend, oldHash, true),
			pod("f-new", frontend, newFrontend.Labels[labels.PodTemplateHashKey], true),
			pod("w0", worker0, worker0.Labels[labels.PodTemplateHashKey], true),
			pod("w1", worker1, worker1.Labels[labels.PodTemplateHashKey], false),
		},
	}).categorise().countMembers(pcs)
	got := rolloutReplicasOf(pcs, generationhash.PodTemplateHashes(pcs), obs, []replicaAssessment{{index: 0, breached: true}}, map[int]bool{})
	if len(got) != 1 {
		t.Fatalf("%d replicas, want 1", len(got))
	}
	r := got[0]
	if !r.complete || !r.breached || r.scheduledPods != 4 {
		t.Errorf("complete %v breached %v scheduled %d, want true true 4", r.complete, r.breached, r.scheduledPods)
	}
	byName := map[string]rolloutClique{}
	for _, c := range r.cliques {
		byName[c.name] = c
	}
	f := byName[frontend.Name]
	if !f.specCurrent || !f.base || len(f.oldPods) != 1 || f.oldPods[0].Name != "f-old" || f.ready != 2 || f.readyUpdated != 1 {
		t.Errorf("frontend %+v: want current spec, base gang, f-old old, 2 ready of which 1 updated", f)
	}
	if w := byName[worker0.Name]; !w.base || len(w.oldPods) != 0 || w.readyUpdated != 1 || w.groupReplica != 0 {
		t.Errorf("worker of group replica 0 %+v: want the base gang, nothing old", w)
	}
	if w := byName[worker1.Name]; w.base || w.gang != worker1.Labels[labels.PodGangKey] || w.groupReplica != 1 || w.ready != 0 {
		t.Errorf("worker of group replica 1 %+v: want a gang of its own, not ready", w)
	}
}
