package children

import (
	"context"
	"errors"
	"sync"
	"time"
)

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
