package podcliqueset

import "github.com/copse-dev/copse/internal/podstate"

// writeBudget bounds the objects one pass creates and deletes, so that a
// huge workload, or one deleted in the middle, never keeps a reconcile busy
// for long: the rest waits for the next pass, which re-reads everything.
type writeBudget struct {
	remaining int
	cutShort  bool
}

func newBudget(n int) *writeBudget { return &writeBudget{remaining: n} }

// take reports whether n more writes fit, and counts them if so.
func (b *writeBudget) take(n int) bool {
	if n > b.remaining {
		b.cutShort = true
		return false
	}
	b.remaining -= n
	return true
}

// cut returns the leading pods that fit, counting them.
func (b *writeBudget) cut(pods []podstate.Summary) []podstate.Summary {
	if len(pods) > b.remaining {
		b.cutShort = true
		pods = pods[:b.remaining]
	}
	b.remaining -= len(pods)
	return pods
}

// exhausted reports whether some work was left for the next pass.
func (b *writeBudget) exhausted() bool { return b.cutShort }
