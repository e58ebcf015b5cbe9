package podclique

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
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
	// blocked is lifecycle.MayCreatePods' reason why the clique's replica
	// may not get new pods; "" when it may.
	blocked lifecycle.Reason
}

func (w workloadState) training() bool {
	return w.known && w.workload == copsev1alpha1.WorkloadTypeTraining
}

// workloadStateOf reads the PodCliqueSet (nil when not found) as the clique
// of identity id sees it.
func workloadStateOf(pcs *copsev1alpha1.PodCliqueSet, id blueprint.CliqueIdentity) workloadState {
	replica := lifecycle.ReplicaStateOf(pcs, id.Replica, id.Attempt)
	w := workloadState{known: replica.Known, blocked: lifecycle.MayCreatePods(replica)}
	if pcs != nil {
		w.workload = pcs.Spec.WorkloadType.OrDefault()
		w.ended = replica.Ended
		w.replicaSucceeded = replica.Succeeded
	}
	return w
}
