package children

// Budget bounds the objects one pass writes (creates, updates, deletes,
// pods included), so that a huge workload, or one deleted in the middle,
// never keeps a reconcile busy for long: the rest waits for the next pass,
// which re-reads everything.
type Budget struct {
	remaining int
	cutShort  bool
	onCut     func()
}

// NewBudget is a budget of n writes.
func NewBudget(n int) *Budget { return &Budget{remaining: n} }

// OnCut sets what is called once, the first time the pass leaves work
// for the next one (the operator counts it in a metric).
func (b *Budget) OnCut(f func()) *Budget {
	b.onCut = f
	return b
}

// cut records that some work did not fit.
func (b *Budget) cut() {
	if !b.cutShort && b.onCut != nil {
		b.onCut()
	}
	b.cutShort = true
}

// Take reports whether n more writes fit, and counts them if so.
func (b *Budget) Take(n int) bool {
	if n > b.remaining {
		b.cut()
		return false
	}
	b.remaining -= n
	return true
}

// Remaining is how many writes are left.
func (b *Budget) Remaining() int { return b.remaining }

// Exhausted reports whether some work was left for the next pass.
func (b *Budget) Exhausted() bool { return b.cutShort }

// spend counts n writes a plan made within Remaining, and whether the plan
// left some out.
func (b *Budget) spend(n int, cutShort bool) {
	b.remaining -= n
	if cutShort {
		b.cut()
	}
}

// Cut returns the leading items that fit, counting them.
func Cut[T any](b *Budget, items []T) []T {
	if len(items) > b.remaining {
		b.cut()
		items = items[:b.remaining]
	}
	b.remaining -= len(items)
	return items
}
