package podwrite

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

// PassTime is how long one reconcile keeps starting batches of pod writes;
// what remains is for its next pass, which first reads the object and its
// owners again. It bounds how long a deleted workload keeps getting pods.
const PassTime = time.Second

// InSlowStartBatches calls fn for items 0..n-1 in batches of start, 2*start,
// ... (at most limit), the calls of one batch running concurrently. It stops
// after the first batch in which a call fails, so a systematic failure (a
// quota, an admission webhook refusing pods) costs a handful of calls rather
// than n. Callers start at 1 after a failure and at limit when the last run
// went through, so a healthy burst does not pay the slow start every pass.
// It starts no batch after stopBy (zero: no time limit), so that a slow API
// server cannot keep one pass busy for long: the caller sees fewer
// successes than n without an error, and continues in its next pass.
// It returns how many calls succeeded and the failures joined.
func InSlowStartBatches(ctx context.Context, n, start, limit int, stopBy time.Time, fn func(ctx context.Context, item int) error) (succeeded int, err error) {
	next := 0
	for _, size := range batchSizes(n, start, limit) {
		if !stopBy.IsZero() && time.Now().After(stopBy) {
			return succeeded, nil
		}
		errs := make([]error, size)
		var wg sync.WaitGroup
		for i := range size {
			item := next + i
			wg.Go(func() { errs[i] = fn(ctx, item) })
		}
		wg.Wait()
		next += size
		failed := 0
		for _, e := range errs {
			if e != nil {
				failed++
			}
		}
		succeeded += size - failed
		if failed > 0 {
			return succeeded, errors.Join(errs...)
		}
	}
	return succeeded, nil
}

// batchSizes splits n items into batches that double from start up to limit.
func batchSizes(n, start, limit int) []int {
	limit = max(limit, 1)
	var sizes []int
	for size := min(max(start, 1), limit); n > 0; size = min(2*size, limit) {
		batch := min(size, n)
		sizes = append(sizes, batch)
		n -= batch
	}
	return sizes
}
