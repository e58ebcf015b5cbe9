package podcliqueset

import (
	"testing"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
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
			h := assessReplica(0, c.expected, c.members)
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
		replicas     []replicaHealth
		inProgress   map[int]bool
		now          time.Time
		wantRecreate []int
		wantRequeue  time.Duration
	}{
		{name: "healthy replicas: nothing", replicas: []replicaHealth{{index: 0, available: true}}, now: t0},
		{name: "breach younger than delay: requeue for the remainder",
			replicas: []replicaHealth{{index: 0, breached: true, breachedSince: t0}}, now: t0.Add(4 * time.Second),
			wantRequeue: 6 * time.Second},
		{name: "breach exactly at delay: recreate",
			replicas: []replicaHealth{{index: 0, breached: true, breachedSince: t0}}, now: t0.Add(delay),
			wantRecreate: []int{0}},
		{name: "only the replica past the delay",
			replicas: []replicaHealth{{index: 0, breached: true, breachedSince: t0}, {index: 1, breached: true, breachedSince: t0.Add(8 * time.Second)}},
			now:      t0.Add(11 * time.Second), wantRecreate: []int{0}, wantRequeue: 7 * time.Second},
		{name: "a replica being recreated is not recreated again",
			replicas: []replicaHealth{{index: 0, breached: true, breachedSince: t0}}, inProgress: map[int]bool{0: true},
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
	got := mergeRecreations(previous, added, map[int]bool{1: true}, t0.Add(time.Minute))
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
	replaced := mergeRecreations(got, []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 3}}, nil, t0)
	if len(replaced) != 3 || replaced[1].Attempt != 3 || replaced[1].CompletedAt != nil {
		t.Errorf("replacement of replica 1: %+v", replaced)
	}
}

func TestCurrentAttempt(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 4}}
	if got := currentAttempt(pcs, 1); got != 4 {
		t.Errorf("replica 1: got %d, want 4", got)
	}
	if got := currentAttempt(pcs, 0); got != 0 {
		t.Errorf("never recreated replica: got %d, want 0", got)
	}
}
