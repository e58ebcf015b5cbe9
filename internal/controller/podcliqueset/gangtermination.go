package podcliqueset

import (
	"time"
)

// DefaultTerminationDelay is Grove's wait before a breached replica is torn
// down, so that the scheduler has time to bring it back by itself.
const DefaultTerminationDelay = 4 * time.Hour

// terminationDecision says which replicas to recreate now and when to look
// again for breaches that have not yet lasted terminationDelay.
type terminationDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideGangTerminations picks the breached replicas whose breach has lasted
// longer than delay. Replicas already being recreated are skipped: their
// breach is the one being handled.
func decideGangTerminations(replicas []replicaHealth, inProgress map[int]bool, delay time.Duration, now time.Time) terminationDecision {
	var d terminationDecision
	for _, h := range replicas {
		if !h.breached || inProgress[h.index] {
			continue
		}
		remaining := h.breachedSince.Add(delay).Sub(now)
		if remaining <= 0 {
			d.recreate = append(d.recreate, h.index)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}
