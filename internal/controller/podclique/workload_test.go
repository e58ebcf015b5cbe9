package podclique

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestCreationsFrozen(t *testing.T) {
	failedCondition := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: status, Reason: copsev1alpha1.ReasonMaxRestartsExceeded}}
	}
	cases := []struct {
		name            string
		pcs             *copsev1alpha1.PodCliqueSet // nil: not found
		workload        copsev1alpha1.WorkloadType
		phase           copsev1alpha1.PodCliqueSetPhase
		conditions      []metav1.Condition
		cliqueSucceeded bool
		wantWorkload    copsev1alpha1.WorkloadType
		wantFrozen      bool
	}{
		{name: "training, pending", workload: training, phase: copsev1alpha1.PodCliqueSetPhasePending, wantWorkload: training},
		{name: "training, running", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning, wantWorkload: training},
		{name: "training, no phase yet", workload: training, wantWorkload: training},
		{name: "training, succeeded", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, wantWorkload: training, wantFrozen: true},
		{name: "training, failed", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseFailed, wantWorkload: training, wantFrozen: true},
		{name: "training, Failed condition before the phase", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			conditions: failedCondition(metav1.ConditionTrue), wantWorkload: training, wantFrozen: true},
		{name: "training, Failed condition False", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			conditions: failedCondition(metav1.ConditionFalse), wantWorkload: training},
		{name: "training, the clique succeeded", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			cliqueSucceeded: true, wantWorkload: training, wantFrozen: true},
		{name: "inference ignores a phase", workload: inference, phase: copsev1alpha1.PodCliqueSetPhaseFailed,
			conditions: failedCondition(metav1.ConditionTrue), wantWorkload: inference},
		{name: "unset workload type is inference", workload: "", phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, wantWorkload: inference},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := testPodCliqueSet(c.workload)
			pcs.Status.Phase = c.phase
			pcs.Status.Conditions = c.conditions
			w := workloadStateOf(pcs)
			if !w.known || w.workload != c.wantWorkload {
				t.Errorf("workload %+v, want known %s", w, c.wantWorkload)
			}
			if got := creationsFrozen(w, c.cliqueSucceeded); got != c.wantFrozen {
				t.Errorf("frozen %v, want %v", got, c.wantFrozen)
			}
		})
	}
	if w := workloadStateOf(nil); w.known || creationsFrozen(w, false) {
		t.Errorf("a missing PodCliqueSet: %+v, frozen %v; want unknown and not frozen (the reconciler does not plan then)", w, creationsFrozen(w, false))
	}
}
