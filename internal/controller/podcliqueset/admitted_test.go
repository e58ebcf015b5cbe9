package podcliqueset

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestComputeStatusWritesTheAdmittedCondition: the Admitted condition of a
// queued PodCliqueSet is written with the rest of the status (this
// controller is the one writer of PodCliqueSet status), removed when the
// protocol says so, and left alone for a PodCliqueSet outside Kueue.
func TestComputeStatusWritesTheAdmittedCondition(t *testing.T) {
	admitted := metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonAdmitted, Message: "Workload podcliqueset-job is admitted by ClusterQueue team-a", LastTransitionTime: metav1.NewTime(t0)}
	pending := metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse,
		Reason: copsev1alpha1.ReasonPending, Message: "waits", LastTransitionTime: metav1.NewTime(t0)}
	tests := []struct {
		name      string
		before    *metav1.Condition
		admission admission
		want      *metav1.Condition
	}{
		{name: "queued: the condition is written", admission: admission{tracked: true, condition: &pending}, want: &pending},
		{name: "admitted: it changes", before: &pending, admission: admission{tracked: true, condition: &admitted}, want: &admitted},
		{name: "left its queue: it is removed", before: &pending, admission: admission{tracked: true}},
		{name: "not queued (or Kueue off): it stays as it is", before: &pending, want: &pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs, obs := trainingJob(metav1.ConditionUnknown)
			if tt.before != nil {
				pcs.Status.Conditions = []metav1.Condition{*tt.before}
			}
			got := computeStatus(pcs, statusInputs{observed: obs, decision: passDecision{causeReplica: -1}, now: t0, admission: tt.admission})
			cond := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeAdmitted)
			switch {
			case tt.want == nil && cond != nil:
				t.Errorf("Admitted %+v, want none", *cond)
			case tt.want != nil && cond == nil:
				t.Errorf("no Admitted condition, want %s", tt.want.Reason)
			case tt.want != nil && (cond.Status != tt.want.Status || cond.Reason != tt.want.Reason || cond.Message != tt.want.Message):
				t.Errorf("Admitted %s/%s %q, want %s/%s %q", cond.Status, cond.Reason, cond.Message, tt.want.Status, tt.want.Reason, tt.want.Message)
			}
		})
	}
}
