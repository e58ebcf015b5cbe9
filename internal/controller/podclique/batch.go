package podclique

import (
	"context"
	"errors"
	"sync"
)

// maxBatchSize bounds how many API writes one batch sends at once, so a large
// clique cannot flood the API server or exhaust the client's rate limit.
const maxBatchSize = 64

// inSlowStartBatches calls fn for items 0..n-1 in batches of 1, 2, 4, ... (at
// most limit), the calls of one batch running concurrently. It stops after
// the first batch in which a call fails, so a systematic failure (a quota, an
// admission webhook refusing pods) costs a handful of calls rather than n.
// It returns how many calls succeeded and the failures joined.
func inSlowStartBatches(ctx context.Context, n, limit int, fn func(ctx context.Context, item int) error) (succeeded int, err error) {
	next := 0
	for _, size := range batchSizes(n, limit) {
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

// batchSizes splits n items into batches that double from 1 up to limit.
func batchSizes(n, limit int) []int {
	limit = max(limit, 1)
	var sizes []int
	for size := 1; n > 0; size = min(2*size, limit) {
		batch := min(size, n)
		sizes = append(sizes, batch)
		n -= batch
	}
	return sizes
}
