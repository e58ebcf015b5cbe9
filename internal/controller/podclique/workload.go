package podclique

import (
	"k8s.io/apimachinery/pkg/api/meta"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// workloadState is what the PodClique controller needs to know about the
// PodCliqueSet that owns a clique.
type workloadState struct {
	// known is false when the PodCliqueSet could not be found; the other
	// fields are then meaningless.
	known bool
	// workload is the PodCliqueSet's spec.workloadType; an unset type is
	// Inference.
	workload copsev1alpha1.WorkloadType
	// ended is true for a Training workload that is over: status.phase is
	// Succeeded or Failed, or the Failed condition is True (the PodCliqueSet
	// controller may delete pods before the phase is written). Always false
	// for Inference.
	ended bool
}

func (w workloadState) training() bool {
	return w.known && w.workload == copsev1alpha1.WorkloadTypeTraining
}

// workloadStateOf reads a PodCliqueSet; nil means it was not found.
func workloadStateOf(pcs *copsev1alpha1.PodCliqueSet) workloadState {
	if pcs == nil {
		return workloadState{}
	}
	w := workloadState{known: true, workload: pcs.Spec.WorkloadType}
	if w.workload == "" {
		w.workload = copsev1alpha1.WorkloadTypeInference
	}
	if w.workload == copsev1alpha1.WorkloadTypeTraining {
		w.ended = pcs.Status.Phase.IsTerminal() ||
			meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
	}
	return w
}

// creationsFrozen reports whether the clique may get no new pods at all,
// neither to fill an index nor to replace an ended pod: its Training
// workload is over, or the clique itself has succeeded. A finished clique
// is done, and a finished workload must not start pods again that its
// PodCliqueSet controller has just terminated.
func creationsFrozen(w workloadState, cliqueSucceeded bool) bool {
	return (w.training() && w.ended) || cliqueSucceeded
}
