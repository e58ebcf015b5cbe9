package podclique

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"

	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// releaseInput is what decides whether a pod's outcome finalizer may go.
type releaseInput struct {
	// cliqueUID is the live PodClique's UID; pods controlled by anything
	// else (an earlier PodClique of the same name) are not this clique's
	// to account for.
	cliqueUID types.UID
	// cliqueGoing: the PodClique is being deleted; its pods go with it.
	cliqueGoing bool
	training    bool
	// ended: the Training workload is over; what is left needs no record.
	ended bool
	// replicaSucceeded: the clique's replica succeeded (it met the success
	// policy while others run); its lingering pods' outcomes change nothing.
	replicaSucceeded bool
	// namespaceGoing: the pods' namespace is being deleted; whatever its
	// pods did, nothing of the workload will be left to read it.
	namespaceGoing bool
	desired        int
	// recordedSucceeded and recordedReplacing are the records as written to
	// the API server: a pod is released only once its outcome is durable.
	recordedSucceeded indexset.Set
	recordedReplacing map[types.UID]bool
}

// outcomeReleasable reports whether the pod's copsev1alpha1.OutcomeFinalizer
// may be removed: its outcome is recorded, or it is not to be accounted for.
// A pod that exited 0 is released only once its index is recorded, so it can
// never vanish before copse knows its index is done. A failed pod that is a
// breach keeps the finalizer until the PodCliqueSet controller restarts its
// replica or ends the workload (both release it). Once the workload ended or
// the replica succeeded, no outcome is recorded any more: a pod that ended
// or is being deleted goes at once; so does every such pod once its
// namespace is being deleted: Kubernetes deletes a namespace's pods before
// their owners, so a pod held for a record would hold the namespace.
func outcomeReleasable(p podstate.Summary, in releaseInput) bool {
	switch {
	case !p.HasOutcomeFinalizer:
		return false
	case in.cliqueGoing, p.ControllerUID != in.cliqueUID, !in.training:
		return true
	case in.namespaceGoing:
		return p.Terminal() || p.Terminating
	case in.ended || in.replicaSucceeded:
		return p.Terminal() || p.Terminating
	case p.Succeeded():
		return !p.HasIndex || p.Index >= in.desired || in.recordedSucceeded.Has(p.Index)
	case p.Failed():
		return in.recordedReplacing[p.UID]
	}
	return false
}

// releaseInputOf is what outcomeReleasable decides from for the PodClique's
// pods, its records as pclq holds them (the status this pass writes, when
// the plan is made).
func releaseInputOf(pclq *copsev1alpha1.PodClique, ws workloadState) releaseInput {
	return releaseInput{
		cliqueUID:         pclq.UID,
		cliqueGoing:       pclq.DeletionTimestamp != nil,
		training:          ws.training(),
		ended:             ws.ended,
		replicaSucceeded:  ws.replicaSucceeded,
		desired:           int(pclq.Spec.Replicas),
		recordedSucceeded: lifecycle.RecordedSucceeded(pclq),
		recordedReplacing: uidSet(pclq.Status.ReplacingPods),
	}
}

// releaseDecision is what releasesOf decided.
type releaseDecision struct {
	pods []podstate.Summary
	// truncated: more pods wait for their finalizer than the budget allowed.
	truncated bool
}

// releasesOf are the pods whose outcome finalizer goes this pass: those
// whose outcome the written status records, or that are not to be accounted
// for (outcomeReleasable), and the strays; not those the pass writes
// otherwise (skip: a pod deleted is released with its deletion). Without the PodCliqueSet the records
// cannot be trusted to be complete: only pods that are plainly not this
// clique's go. At most budget are released.
func releasesOf(in releaseInput, known bool, owned, strays []podstate.Summary, skip map[types.UID]bool, budget int) releaseDecision {
	var out releaseDecision
	if !known && len(strays) == 0 {
		return out
	}
	for _, p := range append(slices.Clone(owned), strays...) {
		if skip[p.UID] || !outcomeReleasable(p, in) {
			continue
		}
		if len(out.pods) >= budget {
			out.truncated = true
			break
		}
		out.pods = append(out.pods, p)
	}
	return out
}
