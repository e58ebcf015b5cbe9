package kueue

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestAdmittedCondition: the condition the PodCliqueSet controller writes is
// the one Decide's step leads to, for every input, and none once the
// PodCliqueSet left its queue and its Workload is gone.
func TestAdmittedCondition(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		// want is the condition's reason, "" for none.
		want string
	}{
		{name: "waiting for Kueue", in: Inputs{PodCliqueSet: queued(), Workload: pendingIn(workloadOf(queued()))}, want: copsev1alpha1.ReasonPending},
		{name: "admitted", in: Inputs{PodCliqueSet: started(queued()), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: copsev1alpha1.ReasonAdmitted},
		{name: "the last creation refused", in: Inputs{PodCliqueSet: queued(), Refusal: "exceeded quota"}, want: copsev1alpha1.ReasonWorkloadRefused},
		{name: "evicted, pods still going", in: Inputs{PodCliqueSet: suspended(started(queued())), PodsRemain: true,
			Workload: evicted(admitted(workloadOf(queued())), "Preempted")}, want: copsev1alpha1.ReasonEvicted},
		{name: "left its queue, no Workload: none",
			in: Inputs{PodCliqueSet: withAdmitted(withQueue(queued(), ""), metav1.ConditionFalse, copsev1alpha1.ReasonPending)}},
		{name: "the PodCliqueSet is gone: none", in: Inputs{Orphan: workloadOf(queued())}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			got := AdmittedCondition(tt.in)
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("condition %+v, want none", *got)
			case tt.want == "":
				return
			case got == nil:
				t.Fatalf("no condition, want reason %s", tt.want)
			}
			if got.Type != copsev1alpha1.ConditionTypeAdmitted || got.Reason != tt.want {
				t.Errorf("condition %s reason %s, want Admitted reason %s", got.Type, got.Reason, tt.want)
			}
			if d := Decide(tt.in); d.Admitted != *got {
				t.Errorf("condition %+v, Decide's %+v", *got, d.Admitted)
			}
		})
	}
}

func TestTracked(t *testing.T) {
	left := withQueue(queued(), "")
	if !Tracked(queued()) {
		t.Error("a PodCliqueSet with the queue label is not tracked")
	}
	if Tracked(left) {
		t.Error("a PodCliqueSet without the label or the condition is tracked")
	}
	meta.SetStatusCondition(&left.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse, Reason: "Pending"})
	if !Tracked(left) {
		t.Error("a PodCliqueSet that left its queue with the Admitted condition is not tracked until the condition goes")
	}
}

func TestPodsRemain(t *testing.T) {
	if PodsRemain(queued(), 0) {
		t.Error("a PodCliqueSet that never ran has pods left")
	}
	if !PodsRemain(queued(), 1) {
		t.Error("an active pod does not count")
	}
	if !PodsRemain(running(queued()), 0) {
		t.Error("a startTime that is still set does not count: the templates may not change until it is cleared")
	}
}
