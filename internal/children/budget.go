package children

import (
	"context"
	"errors"
	"sync"
	"time"
)

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

// MaxInFlight bounds how many pod writes one reconcile has in flight at
// once. The API server's priority and fairness queues the rest of a burst;
// this bound keeps one reconcile from holding more connections than that.
const MaxInFlight = 64

// PassTime is how long one reconcile keeps starting pod writes; what
// remains is for its next pass, which first reads the object and its owners
// again. It bounds how long a deleted workload keeps getting pods.
const PassTime = time.Second

// InSlowStart calls fn for items 0..n-1 in order, with at most a window of
// calls in flight. The window starts at start and doubles each time as many
// calls succeeded as it is wide, up to limit, as a batch of start, 2*start,
// ... would; but a call starts as soon as any in-flight call returns, so one
// slow request (the API server queues some for longer) never holds the
// others back as a batch that waits for its slowest member would.
//
// It starts no call after the first failure, so a systematic failure (a
// quota, an admission webhook refusing pods) costs about a window of calls
// rather than n. Callers start at 1 after a failure and at limit when the
// last run went through, so a healthy burst does not pay the slow start
// every pass. It starts no call after stopBy (zero: no time limit), so that
// a slow API server cannot keep one pass busy for long: the caller sees
// fewer successes than n without an error, and continues in its next pass.
// It returns when every started call has returned: how many succeeded, and
// the failures joined.
func InSlowStart(ctx context.Context, n, start, limit int, stopBy time.Time, fn func(ctx context.Context, item int) error) (succeeded int, err error) {
	s := newSlowStart(start, limit)
	var calls sync.WaitGroup
	for item := range n {
		if !s.admit(stopBy) || ctx.Err() != nil {
			break
		}
		calls.Go(func() { s.done(fn(ctx, item)) })
	}
	calls.Wait()
	return s.succeeded, errors.Join(s.failures...)
}

// slowStart is the window of InSlowStart.
type slowStart struct {
	mu       sync.Mutex
	returned *sync.Cond // signalled when a call returns
	// window is how many calls may be in flight; it doubles after window
	// successes since it last grew, up to limit.
	window, limit int
	inFlight      int
	grownAt       int // succeeded when the window last grew
	succeeded     int
	failures      []error
}

func newSlowStart(start, limit int) *slowStart {
	limit = max(limit, 1)
	s := &slowStart{window: min(max(start, 1), limit), limit: limit}
	s.returned = sync.NewCond(&s.mu)
	return s
}

// admit waits for room in the window and takes it; false means no more
// calls may start (a failure, or past stopBy).
func (s *slowStart) admit(stopBy time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight >= s.window && len(s.failures) == 0 {
		s.returned.Wait()
	}
	if len(s.failures) > 0 || (!stopBy.IsZero() && time.Now().After(stopBy)) {
		return false
	}
	s.inFlight++
	return true
}

// done records a call's result and grows the window.
func (s *slowStart) done(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if err != nil {
		s.failures = append(s.failures, err)
	} else {
		s.succeeded++
		if s.succeeded-s.grownAt >= s.window && s.window < s.limit {
			s.window = min(2*s.window, s.limit)
			s.grownAt = s.succeeded
		}
	}
	s.returned.Broadcast()
}
