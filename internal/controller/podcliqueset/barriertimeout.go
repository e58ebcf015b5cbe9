package podcliqueset

import (
	"slices"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// barrierDecision is what this pass decides about restarts in place whose
// barrier has not lifted: the replicas to recreate, and when to look again
// for the others.
type barrierDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideBarriers is overdueBarriers for pcs in this pass: nothing for an
// ended workload, and no replica that is decided otherwise this pass.
func decideBarriers(pcs *copsev1alpha1.PodCliqueSet, d passDecision, placement placementDecision, timeout time.Duration, now time.Time) barrierDecision {
	if timeout <= 0 || d.ended || d.failReason != "" {
		return barrierDecision{}
	}
	skip := map[int]bool{}
	for _, replica := range slices.Concat(d.recreate, d.recreateUncounted, placement.recreate) {
		skip[replica] = true
	}
	return overdueBarriers(pcs.Status.ReplicaRecreations, skip, timeout, now)
}

// overdueBarriers picks the replicas whose restart in place has held its
// barrier for timeout or longer since it was decided: a kept pod whose
// kubelet never restarts its containers (its restart agent lost while the
// pod still runs) would keep every gate of the replica closed, and its
// nodes held, for good. Such a replica is recreated, without consuming a
// restart. Only a restart whose old run is gone (CompletedAt) is picked: a
// new record replaces the old one, which must have nothing left to delete.
// skip holds the replicas decided otherwise this pass.
func overdueBarriers(recs []copsev1alpha1.ReplicaRecreation, skip map[int]bool, timeout time.Duration, now time.Time) barrierDecision {
	var d barrierDecision
	for _, rec := range recs {
		replica := int(rec.ReplicaIndex)
		if !rec.InPlace || rec.BarrierLiftedAt != nil || skip[replica] {
			continue
		}
		remaining := rec.StartedAt.Add(timeout).Sub(now)
		if remaining <= 0 && rec.CompletedAt != nil {
			d.recreate = append(d.recreate, replica)
			continue
		}
		remaining = max(remaining, minRequeue)
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}
