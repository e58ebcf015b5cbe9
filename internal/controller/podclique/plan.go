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
	// frozen forbids new pods (creationsFrozen): no index is filled and no
	// ended pod is replaced. Deletions that keep the clique in shape (a
	// second pod on an index, a pod without an index, scale-in) still
	// happen.
	frozen bool
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
// count. An ended pod is replaced or kept as replacementDecision says, the
// clique being available when its healthy pods (podCounts.healthy) reach
// minAvailable; a replaced pod is deleted and its index is free again in the
// same plan, so the replacement is created right away. The remaining pods
// hold one index each (extra pods on one index, and pods without a valid
// index, are deleted). Free indices are filled lowest first up to the
// desired count. A frozen plan creates nothing and replaces nothing.
//
// In a Training workload a pod that exited 0 is never deleted, for no
// reason: it is the record that its index is done, from which the Succeeded
// condition is derived. It holds its index; another pod on that index is
// the one removed.
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

	training := in.workload == copsev1alpha1.WorkloadTypeTraining
	available := countPods(live).healthy(in.workload) >= in.minAvailable
	done := map[int]bool{}
	var occupants []podInfo
	for _, p := range live {
		switch {
		case training && p.succeeded():
			if p.hasIndex {
				done[p.index] = true
			}
		case !in.frozen && replacementDecision(in.workload, p, available) == replacePod:
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeEnded})
		case !p.hasIndex:
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeNoIndex})
		default:
			occupants = append(occupants, p)
		}
	}

	var contenders []podInfo
	for _, p := range occupants {
		if done[p.index] {
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeDuplicateIndex})
			continue
		}
		contenders = append(contenders, p)
	}
	kept, extra := onePodPerIndex(contenders)
	for _, p := range extra {
		plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeDuplicateIndex})
	}

	if !in.frozen {
		occupied := make([]int, 0, len(kept)+len(done)+len(in.creating))
		for _, p := range kept {
			occupied = append(occupied, p.index)
		}
		for index := range done {
			occupied = append(occupied, index)
		}
		occupied = append(occupied, in.creating...)
		plan.create = podsToCreate(in.desired, occupied)
	}

	if len(in.creating) == 0 {
		for _, p := range podsToDelete(len(kept)+len(done)-in.desired, kept) {
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeScaleIn})
		}
	}
	return plan
}
