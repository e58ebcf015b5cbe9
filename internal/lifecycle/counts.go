package lifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/podstate"
)

// PodCounts are a clique's pods counted the way its status, its conditions,
// the replacement rule and the PodCliqueSet's breach rule need them. Both
// controllers count through CountPods, so they agree on what breaks a
// clique.
type PodCounts struct {
	// Active pods have neither ended nor are terminating; Ready, Scheduled,
	// Gated and Started are subsets of them.
	Active, Ready, Scheduled, Gated, Started int
	// Succeeded is how many indices exited 0: for Training, the clique's
	// completion (recorded indices and pods that show it); for Inference,
	// the pods of phase Succeeded.
	Succeeded int
	// Failed are the Failed pods that count against the clique: not those
	// already being replaced. For Training they count while terminating
	// too: the pod failed, whoever deletes it.
	Failed []podstate.Summary
}

// CountPods counts pods. replacing are the failed pods whose replacement is
// recorded; succeededIndices is the Training completion count (ignored for
// Inference).
func CountPods(pods []podstate.Summary, training bool, succeededIndices int, replacing map[types.UID]bool) PodCounts {
	var c PodCounts
	for _, p := range pods {
		switch {
		case p.Terminating && (!training || !p.Terminal()):
		case p.Succeeded():
			if !training {
				c.Succeeded++
			}
		case p.Failed():
			if !replacing[p.UID] {
				c.Failed = append(c.Failed, p)
			}
		default:
			c.Active++
			if p.Ready {
				c.Ready++
			}
			if p.Started {
				c.Started++
			}
			if p.Scheduled {
				c.Scheduled++
			} else if p.ScheduleGated {
				c.Gated++
			}
		}
	}
	if training {
		c.Succeeded = succeededIndices
	}
	return c
}

// Healthy is how many pods count toward minAvailable: the ready ones, and
// in a Training workload also the indices that exited 0, since a finished
// worker did its part and is not a loss.
func (c PodCounts) Healthy(training bool) int {
	if training {
		return c.Ready + c.Succeeded
	}
	return c.Ready
}

// Placed is how many pods count as scheduled toward minAvailable: the bound
// ones, and in a Training workload also the indices that exited 0 (they ran
// on a node and released it by finishing, not by losing it).
func (c PodCounts) Placed(training bool) int {
	if training {
		return c.Scheduled + c.Succeeded
	}
	return c.Scheduled
}

// Available reports whether minAvailable pods are both placed and healthy.
func (c PodCounts) Available(training bool, minAvailable int) bool {
	return c.Healthy(training) >= minAvailable && c.Placed(training) >= minAvailable
}

// BrokenByFailures reports whether a Training clique's failed pods break it:
// some failed and too few are left to be available without them. The break
// is at once (a failed training pod does not come back), and happened when
// the first of them failed (FailedSince).
func (c PodCounts) BrokenByFailures(minAvailable int) bool {
	return len(c.Failed) > 0 && !c.Available(true, minAvailable)
}

// FailedSince is the earliest finish time among the failed pods (zero when
// none failed or none has a known time).
func (c PodCounts) FailedSince() time.Time {
	var since time.Time
	for _, p := range c.Failed {
		if !p.FinishedAt.IsZero() && (since.IsZero() || p.FinishedAt.Before(since)) {
			since = p.FinishedAt
		}
	}
	return since
}
