package podcliqueset

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestOverdueBarriers(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	rec := func(replica int32, inPlace bool, started time.Duration, completed, lifted *metav1.Time) copsev1alpha1.ReplicaRecreation {
		return copsev1alpha1.ReplicaRecreation{ReplicaIndex: replica, InPlace: inPlace, StartedAt: *at(started), CompletedAt: completed, BarrierLiftedAt: lifted}
	}
	const timeout = 5 * time.Minute
	tests := []struct {
		name        string
		recs        []copsev1alpha1.ReplicaRecreation
		skip        map[int]bool
		wantReplica []int
		wantRequeue time.Duration
	}{
		{name: "no restart in place", recs: []copsev1alpha1.ReplicaRecreation{rec(0, false, time.Hour, at(time.Hour), nil)}},
		{name: "barrier lifted", recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Hour, at(time.Hour), at(time.Hour))}},
		{name: "held, not yet overdue: look again when it is",
			recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Minute, at(time.Minute), nil)}, wantRequeue: 4 * time.Minute},
		{name: "overdue: recreated",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, timeout, at(time.Minute), nil)}, wantReplica: []int{1}},
		{name: "overdue but the old run not gone yet: waits for it",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, time.Hour, nil, nil)}, wantRequeue: minRequeue},
		{name: "overdue but decided otherwise this pass",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, time.Hour, at(time.Hour), nil)}, skip: map[int]bool{1: true}},
		{name: "the earliest deadline is the requeue",
			recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Minute, at(time.Minute), nil), rec(1, true, 3*time.Minute, at(time.Minute), nil),
				rec(2, true, 10*time.Minute, at(time.Minute), nil)},
			wantReplica: []int{2}, wantRequeue: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := overdueBarriers(tt.recs, tt.skip, timeout, now)
			if !slices.Equal(got.recreate, tt.wantReplica) {
				t.Errorf("recreate %v, want %v", got.recreate, tt.wantReplica)
			}
			if got.requeueAfter != tt.wantRequeue {
				t.Errorf("requeueAfter %s, want %s", got.requeueAfter, tt.wantRequeue)
			}
		})
	}
}

func TestDecideBarriersLeavesEndedWorkloadsAndOtherDecisions(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	old := metav1.NewTime(now.Add(-time.Hour))
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, InPlace: true, StartedAt: old, CompletedAt: &old},
		{ReplicaIndex: 1, InPlace: true, StartedAt: old, CompletedAt: &old},
	}
	if got := decideBarriers(pcs, passDecision{recreate: []int{0}}, placementDecision{}, 5*time.Minute, now); !slices.Equal(got.recreate, []int{1}) {
		t.Errorf("with replica 0 restarted this pass: recreate %v, want [1]", got.recreate)
	}
	if got := decideBarriers(pcs, passDecision{}, placementDecision{}, 0, now); len(got.recreate) != 0 {
		t.Errorf("with no timeout: recreate %v, want none", got.recreate)
	}
	if got := decideBarriers(pcs, passDecision{ended: true}, placementDecision{}, 5*time.Minute, now); len(got.recreate) != 0 {
		t.Errorf("ended workload: recreate %v, want none", got.recreate)
	}
}
