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
	limit = max(limit, 1)
	next := 0
	for size := 1; next < n; size = min(2*size, limit) {
		batch := min(size, n-next)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			item := next + i
			wg.Go(func() { errs[i] = fn(ctx, item) })
		}
		wg.Wait()
		next += batch
		failed := 0
		for _, e := range errs {
			if e != nil {
				failed++
			}
		}
		succeeded += batch - failed
		if failed > 0 {
			return succeeded, errors.Join(errs...)
		}
	}
	return succeeded, nil
}
