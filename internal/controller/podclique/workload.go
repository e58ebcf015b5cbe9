package podclique

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// workloadState is what the PodClique controller needs to know about the
// PodCliqueSet that owns a clique.
type workloadState struct {
	// known is false when the PodCliqueSet could not be found; the other
	// fields are then meaningless.
	known bool
	// workload is the PodCliqueSet's spec.workloadType (never empty).
	workload copsev1alpha1.WorkloadType
	// ended: a Training workload that is over (lifecycle.WorkloadEnded).
	ended bool
	// replicaSucceeded: the clique's Training replica succeeded
	// (status.succeededReplicaIndexes); it records no more outcomes.
	replicaSucceeded bool
}

func (w workloadState) training() bool {
	return w.known && w.workload == copsev1alpha1.WorkloadTypeTraining
}

// workloadStateOf reads the PodCliqueSet (nil when not found) and the state
// of the clique's replica (lifecycle.ReplicaStateOf).
func workloadStateOf(pcs *copsev1alpha1.PodCliqueSet, replica lifecycle.ReplicaState) workloadState {
	w := workloadState{known: replica.Known}
	if pcs != nil {
		w.workload = pcs.Spec.WorkloadType.OrDefault()
		w.ended = replica.Ended
		w.replicaSucceeded = replica.Succeeded
	}
	return w
}
