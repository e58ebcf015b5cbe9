package podclique

import (
	"github.com/copse-dev/copse/internal/podstate"
)

// replacement is what happens to a pod that ended.
type replacement int

const (
	// keepPod leaves the pod where it is. It keeps its index, so no other pod
	// is created in its place.
	keepPod replacement = iota
	// replacePod deletes the pod and creates a new one with the same index.
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
// Inference, as in Grove, runs forever: every ended pod is replaced at once.
//
// Training is finite. A pod that exited 0 has done its work and stays, as the
// record that its index succeeded. A failed pod is replaced only while the
// clique still has minAvailable healthy pods (ready or exited 0,
// lifecycle.PodCounts.healthy) without it (cliqueAvailable), and then only after the
// replacement back-off (planPods); otherwise it stays, the clique reports
// MinAvailableBreached=True (PodsFailed), and recovering the gang is the
// replica restart's job. The two rules use the same count, so a failed pod
// is either replaced or a breach. A pod that ended in an earlier attempt
// (a kept pod whose old process exited before the kubelet restarted it,
// podstate.Summary.EndedInEarlierAttempt) did none of this attempt's work:
// it is replaced, whatever its phase.
func replacementDecision(training bool, pod podstate.Summary, cliqueAvailable bool) replacement {
	if !pod.Terminal() {
		return keepPod
	}
	if !training || pod.EndedInEarlierAttempt() {
		return replacePod
	}
	if pod.Failed() && cliqueAvailable {
		return replacePod
	}
	return keepPod
}
