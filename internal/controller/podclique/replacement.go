package podclique

import (
	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// replacement is what happens to a pod that ended.
type replacement int

const (
	// keepPod leaves the pod where it is. It keeps its index, so no other pod
	// is created in its place.
	keepPod replacement = iota
	// replacePod deletes the pod and creates a new one with the same index
	// in the same reconcile.
	replacePod
)

func (r replacement) String() string {
	if r == replacePod {
		return "replace"
	}
	return "keep"
}

// replacementDecision decides the fate of one pod. Only ended pods (Succeeded
// or Failed) are ever replaced; a pod that was deleted needs no decision, its
// index is simply free and gets a new pod.
//
// Inference, as in Grove, runs forever: every ended pod is replaced.
//
// Training is finite. A pod that exited 0 has done its work and stays, as the
// record that its index succeeded. A failed pod is replaced only while the
// clique still has minAvailable healthy pods (ready or exited 0,
// podCounts.healthy) without it (cliqueAvailable); otherwise it stays, the
// clique reports MinAvailableBreached=True (PodsFailed), and recovering the
// gang is the replica restart's job, not this controller's. The two rules
// use the same count, so a failed pod is either replaced or a breach.
func replacementDecision(workload copsev1alpha1.WorkloadType, pod podInfo, cliqueAvailable bool) replacement {
	if !pod.terminal() {
		return keepPod
	}
	if workload != copsev1alpha1.WorkloadTypeTraining {
		return replacePod
	}
	if pod.phase == corev1.PodFailed && cliqueAvailable {
		return replacePod
	}
	return keepPod
}
