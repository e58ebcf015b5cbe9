package podcliqueset

import (
	"testing"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

var t0 = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

func breach(status metav1.ConditionStatus, since time.Time) []metav1.Condition {
	return []metav1.Condition{{
		Type: constants.ConditionTypeMinAvailableBreached, Status: status, Reason: "R",
		LastTransitionTime: metav1.NewTime(since),
	}}
}

func TestAssessReplica(t *testing.T) {
	cases := []struct {
		name          string
		expected      int
		members       []member
		wantAvailable bool
		wantBreached  bool
		wantSince     time.Time
	}{
		{name: "no members yet", expected: 2},
		{name: "all available", expected: 2, members: []member{
			{name: "a", conditions: breach(metav1.ConditionFalse, t0)},
			{name: "b", conditions: breach(metav1.ConditionFalse, t0)},
		}, wantAvailable: true},
		{name: "a member missing is not available", expected: 2, members: []member{
			{name: "a", conditions: breach(metav1.ConditionFalse, t0)},
		}},
		{name: "never available (Unknown) is neither available nor breached", expected: 1, members: []member{
			{name: "a", conditions: breach(metav1.ConditionUnknown, t0)},
		}},
		{name: "no condition yet is neither", expected: 1, members: []member{{name: "a"}}},
		{name: "earliest breach wins", expected: 2, members: []member{
			{name: "a", conditions: breach(metav1.ConditionTrue, t0.Add(time.Minute))},
			{name: "b", conditions: breach(metav1.ConditionTrue, t0)},
		}, wantBreached: true, wantSince: t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := assessReplica(0, c.expected, c.members, false, nil, nil)
			if h.available != c.wantAvailable || h.breached != c.wantBreached {
				t.Fatalf("available=%v breached=%v, want %v %v", h.available, h.breached, c.wantAvailable, c.wantBreached)
			}
			if c.wantBreached && !h.breachedSince.Equal(c.wantSince) {
				t.Errorf("breachedSince %v, want %v", h.breachedSince, c.wantSince)
			}
		})
	}
}

func TestDecideGangTerminations(t *testing.T) {
	delay := 10 * time.Second
	cases := []struct {
		name         string
		replicas     []replicaAssessment
		inProgress   map[int]bool
		now          time.Time
		wantRecreate []int
		wantRequeue  time.Duration
	}{
		{name: "healthy replicas: nothing", replicas: []replicaAssessment{{index: 0, available: true}}, now: t0},
		{name: "breach younger than delay: requeue for the remainder",
			replicas: []replicaAssessment{{index: 0, breached: true, breachedSince: t0}}, now: t0.Add(4 * time.Second),
			wantRequeue: 6 * time.Second},
		{name: "breach exactly at delay: recreate",
			replicas: []replicaAssessment{{index: 0, breached: true, breachedSince: t0}}, now: t0.Add(delay),
			wantRecreate: []int{0}},
		{name: "only the replica past the delay",
			replicas: []replicaAssessment{{index: 0, breached: true, breachedSince: t0}, {index: 1, breached: true, breachedSince: t0.Add(8 * time.Second)}},
			now:      t0.Add(11 * time.Second), wantRecreate: []int{0}, wantRequeue: 7 * time.Second},
		{name: "a replica being recreated is not recreated again",
			replicas: []replicaAssessment{{index: 0, breached: true, breachedSince: t0}}, inProgress: map[int]bool{0: true},
			now: t0.Add(time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decideGangTerminations(c.replicas, c.inProgress, delay, c.now)
			if len(d.recreate) != len(c.wantRecreate) || (len(d.recreate) > 0 && d.recreate[0] != c.wantRecreate[0]) {
				t.Errorf("recreate %v, want %v", d.recreate, c.wantRecreate)
			}
			if d.requeueAfter != c.wantRequeue {
				t.Errorf("requeueAfter %v, want %v", d.requeueAfter, c.wantRequeue)
			}
		})
	}
}

func TestMergeRecreations(t *testing.T) {
	previous := []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, Attempt: 1, StartedAt: metav1.NewTime(t0), Deleting: []types.UID{"a"}},
		{ReplicaIndex: 1, Attempt: 2, StartedAt: metav1.NewTime(t0), Deleting: []types.UID{"b"}},
	}
	added := []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 2, Attempt: 1, StartedAt: metav1.NewTime(t0), Deleting: []types.UID{"c"}}}
	got := mergeRecreations(previous, added, recreationProgress{finished: map[int]bool{1: true}}, t0.Add(time.Minute))
	if len(got) != 3 {
		t.Fatalf("got %d entries, want 3: %+v", len(got), got)
	}
	if got[0].CompletedAt != nil {
		t.Errorf("replica 0 is still in progress, got completed")
	}
	if got[1].CompletedAt == nil || !got[1].CompletedAt.Time.Equal(t0.Add(time.Minute)) || got[1].Deleting != nil {
		t.Errorf("replica 1 finished: want completedAt set and deleting cleared, got %+v", got[1])
	}
	if got[1].Attempt != 2 {
		t.Errorf("a completed entry keeps its attempt, got %d", got[1].Attempt)
	}
	if got[2].ReplicaIndex != 2 || got[2].CompletedAt != nil {
		t.Errorf("new entry for replica 2 missing or completed: %+v", got[2])
	}
	if previous[1].CompletedAt != nil {
		t.Errorf("mergeRecreations mutated its input")
	}

	// A new recreation of a replica replaces its previous entry.
	replaced := mergeRecreations(got, []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 3}}, recreationProgress{}, t0)
	if len(replaced) != 3 || replaced[1].Attempt != 3 || replaced[1].CompletedAt != nil {
		t.Errorf("replacement of replica 1: %+v", replaced)
	}
}

func TestAssessRecreations(t *testing.T) {
	now := metav1.NewTime(t0)
	recs := []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, Attempt: 2, Deleting: []types.UID{"pclq-0", "pg-0"}},
		{ReplicaIndex: 1, Attempt: 1, Deleting: []types.UID{"pclq-1"}},
		{ReplicaIndex: 2, Attempt: 1, Deleting: []types.UID{"pclq-2"}},
		{ReplicaIndex: 3, Attempt: 1, CompletedAt: &now},
	}
	objects := map[types.UID]bool{"pg-0": true}
	pods := []podstate.Summary{
		{Name: "old-run-of-1", Replica: 1, Attempt: 0, Terminating: true},
		{Name: "new-run-of-2", Replica: 2, Attempt: 1},
		{Name: "other-replica", Replica: 3, Attempt: 0},
	}
	got := assessRecreations(recs, objects, pods)
	if !got.inProgress[0] || !got.inProgress[1] || !got.inProgress[2] || got.inProgress[3] {
		t.Errorf("in progress %v, want 0, 1, 2", got.inProgress)
	}
	if got.remaining[0] != 1 {
		t.Errorf("replica 0: its PodGroup is left, remaining %d", got.remaining[0])
	}
	if got.finished[1] || got.remaining[1] != 1 {
		t.Errorf("replica 1: its objects are gone but a pod of the old run still terminates; finished %v remaining %d",
			got.finished[1], got.remaining[1])
	}
	if !got.finished[2] {
		t.Errorf("replica 2: old objects and pods gone (a pod of the new run does not count): want finished")
	}
}
