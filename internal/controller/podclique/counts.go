package podclique

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// podCounts are a clique's pods counted the way the status, the conditions
// and the replacement rule need them. Terminating pods are not counted.
type podCounts struct {
	// active pods have neither ended nor are terminating; ready, scheduled
	// and gated are subsets of them.
	active, ready, scheduled, gated int
	// succeeded pods exited 0 (phase Succeeded).
	succeeded int
	// failed are the pods of phase Failed.
	failed []podInfo
}

func countPods(pods []podInfo) podCounts {
	var c podCounts
	for _, p := range pods {
		switch {
		case p.terminating:
		case p.succeeded():
			c.succeeded++
		case p.terminal():
			c.failed = append(c.failed, p)
		default:
			c.active++
			if p.ready {
				c.ready++
			}
			if p.scheduled {
				c.scheduled++
			} else if p.scheduleGated {
				c.gated++
			}
		}
	}
	return c
}

// healthy is how many pods count toward minAvailable: the ready ones, and
// in a Training workload also those that exited 0, since a finished worker
// did its part and is not a loss.
func (c podCounts) healthy(workload copsev1alpha1.WorkloadType) int {
	if workload == copsev1alpha1.WorkloadTypeTraining {
		return c.ready + c.succeeded
	}
	return c.ready
}

// placed is how many pods count as scheduled toward minAvailable: the bound
// ones, and in a Training workload also those that exited 0 (they ran on a
// node and released it by finishing, not by losing it).
func (c podCounts) placed(workload copsev1alpha1.WorkloadType) int {
	if workload == copsev1alpha1.WorkloadTypeTraining {
		return c.scheduled + c.succeeded
	}
	return c.scheduled
}
