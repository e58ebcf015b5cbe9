package podclique

import (
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// deletionCause says why a pod is deleted; it appears in logs and events.
type deletionCause string

const (
	causeScaleIn        deletionCause = "scale-in"
	causeEnded          deletionCause = "ended"
	causeDuplicateIndex deletionCause = "duplicate-index"
	causeNoIndex        deletionCause = "no-index"
)

type podDeletion struct {
	pod   podInfo
	cause deletionCause
}

// podPlan is what one reconcile does to the clique's pods.
type podPlan struct {
	// create are the indices of the pods to create.
	create []int
	// delete are the pods to delete, with the reason for each.
	delete []podDeletion
}

// planInput is everything planPods decides from.
type planInput struct {
	desired      int
	minAvailable int
	workload     copsev1alpha1.WorkloadType
	// pods are the clique's pods as the cache shows them.
	pods []podInfo
	// creating are the indices of pods this controller created that the
	// cache does not show yet; they count as existing.
	creating []int
	// deleting are the pods this controller deleted that the cache still
	// shows alive; they count as gone.
	deleting map[types.UID]bool
}

// planPods decides which pods to create and delete.
//
// Pods that are terminating or being deleted by this controller no longer
// count. An ended pod is replaced or kept as replacementDecision says; a
// replaced pod is deleted and its index is free again in the same plan, so
// the replacement is created right away. The remaining pods hold one index
// each (extra pods on one index, and pods without a valid index, are
// deleted). Free indices are filled lowest first up to the desired count.
//
// Scale-in waits while creations are pending: until the cache shows the new
// pods, the planner cannot choose among them, and choosing only among the
// visible ones would remove the wrong pods.
func planPods(in planInput) podPlan {
	var plan podPlan
	var live []podInfo
	for _, p := range in.pods {
		if p.terminating || in.deleting[p.uid] {
			continue
		}
		live = append(live, p)
	}

	available := countReady(live) >= in.minAvailable
	var occupants []podInfo
	for _, p := range live {
		switch {
		case replacementDecision(in.workload, p, available) == replacePod:
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeEnded})
		case !p.hasIndex:
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeNoIndex})
		default:
			occupants = append(occupants, p)
		}
	}

	kept, extra := onePodPerIndex(occupants)
	for _, p := range extra {
		plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeDuplicateIndex})
	}

	occupied := make([]int, 0, len(kept)+len(in.creating))
	for _, p := range kept {
		occupied = append(occupied, p.index)
	}
	occupied = append(occupied, in.creating...)
	plan.create = podsToCreate(in.desired, occupied)

	if len(in.creating) == 0 {
		for _, p := range podsToDelete(len(kept)-in.desired, kept) {
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeScaleIn})
		}
	}
	return plan
}

func countReady(pods []podInfo) int {
	n := 0
	for _, p := range pods {
		if p.active() && p.ready {
			n++
		}
	}
	return n
}
