package podclique

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/podstate"
)

// podCounts are a clique's pods counted the way the status, the conditions
// and the replacement rule need them.
type podCounts struct {
	// active pods have neither ended nor are terminating; ready, scheduled,
	// gated and started are subsets of them.
	active, ready, scheduled, gated, started int
	// succeeded is how many indices exited 0: for Training, the clique's
	// completion (recorded indices and pods that show it); for Inference,
	// the pods of phase Succeeded.
	succeeded int
	// failed are the Failed pods that count against the clique: not those
	// already being replaced. For Training they count while terminating
	// too: the pod failed, whoever deletes it.
	failed []podstate.Summary
}

// countPods counts pods. replacing are the failed pods whose replacement is
// recorded; succeededIndices is the Training completion count (ignored for
// Inference).
func countPods(pods []podstate.Summary, training bool, succeededIndices int, replacing map[types.UID]bool) podCounts {
	var c podCounts
	for _, p := range pods {
		switch {
		case p.Terminating && (!training || !p.Terminal()):
		case p.Succeeded():
			if !training {
				c.succeeded++
			}
		case p.Failed():
			if !replacing[p.UID] {
				c.failed = append(c.failed, p)
			}
		default:
			c.active++
			if p.Ready {
				c.ready++
			}
			if p.Started {
				c.started++
			}
			if p.Scheduled {
				c.scheduled++
			} else if p.ScheduleGated {
				c.gated++
			}
		}
	}
	if training {
		c.succeeded = succeededIndices
	}
	return c
}

// healthy is how many pods count toward minAvailable: the ready ones, and
// in a Training workload also the indices that exited 0, since a finished
// worker did its part and is not a loss.
func (c podCounts) healthy(training bool) int {
	if training {
		return c.ready + c.succeeded
	}
	return c.ready
}

// placed is how many pods count as scheduled toward minAvailable: the bound
// ones, and in a Training workload also the indices that exited 0 (they ran
// on a node and released it by finishing, not by losing it).
func (c podCounts) placed(training bool) int {
	if training {
		return c.scheduled + c.succeeded
	}
	return c.scheduled
}
