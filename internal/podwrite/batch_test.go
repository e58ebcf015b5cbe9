package podwrite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder is an fn for InSlowStart that counts calls per item and the
// most calls it saw in flight at once.
type recorder struct {
	mu                    sync.Mutex
	called                map[int]int
	inFlight, maxInFlight int
	failing               map[int]bool
	delay                 time.Duration
}

func (r *recorder) call(_ context.Context, item int) error {
	r.mu.Lock()
	if r.called == nil {
		r.called = map[int]int{}
	}
	r.called[item]++
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	time.Sleep(r.delay)
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if r.failing[item] {
		return errors.New("boom")
	}
	return nil
}

func TestInSlowStart(t *testing.T) {
	cases := []struct {
		name          string
		n, start      int
		failing       map[int]bool
		wantCalledMin int // items 0..m-1 are called once for some m in [min, max], no others
		wantCalledMax int
		wantSucceeded int // -1: called - len(failing)
		wantErr       bool
	}{
		{name: "nothing to do", n: 0, start: 1},
		{name: "every item once", n: 100, start: 1, wantCalledMin: 100, wantCalledMax: 100, wantSucceeded: 100},
		{name: "the first call fails: nothing more is tried", n: 100, start: 1, failing: map[int]bool{0: true},
			wantCalledMin: 1, wantCalledMax: 1, wantErr: true},
		// At most a window (8) of calls past the failing one are started.
		{name: "a failure stops the run within a window", n: 100, start: 1, failing: map[int]bool{20: true},
			wantCalledMin: 21, wantCalledMax: 21 + 8, wantSucceeded: -1, wantErr: true},
		{name: "a failing first window reports each failure", n: 100, start: 8, failing: map[int]bool{1: true, 2: true},
			wantCalledMin: 3, wantCalledMax: 3 + 8, wantSucceeded: -1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{failing: c.failing, delay: time.Millisecond}
			succeeded, err := InSlowStart(context.Background(), c.n, c.start, 8, time.Time{}, r.call)
			called := len(r.called)
			if called < c.wantCalledMin || called > c.wantCalledMax {
				t.Errorf("%d items called, want %d to %d", called, c.wantCalledMin, c.wantCalledMax)
			}
			for i := range called {
				if r.called[i] != 1 {
					t.Errorf("item %d called %d times, want the first %d items once each", i, r.called[i], called)
				}
			}
			if c.wantSucceeded == -1 {
				c.wantSucceeded = called - len(c.failing)
			}
			if succeeded != c.wantSucceeded || (err != nil) != c.wantErr {
				t.Errorf("succeeded %d, err %v; want %d, error %v", succeeded, err, c.wantSucceeded, c.wantErr)
			}
			if n := len(failures(err)); c.wantErr && n != len(c.failing) {
				t.Errorf("%d failures reported, want %d", n, len(c.failing))
			}
			if r.maxInFlight > 8 {
				t.Errorf("%d calls in flight at once, limit 8", r.maxInFlight)
			}
		})
	}
}

func failures(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// TestInSlowStartGrowsItsWindowLikeBatches: the window doubles from start
// after as many successes as it is wide, up to the limit, and the calls do
// run concurrently.
func TestInSlowStartGrowsItsWindowLikeBatches(t *testing.T) {
	cases := []struct{ n, start, limit, wantMaxInFlight int }{
		{n: 1, start: 1, limit: 8, wantMaxInFlight: 1},
		{n: 3, start: 1, limit: 8, wantMaxInFlight: 2},
		{n: 200, start: 1, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 16, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 4, limit: 4, wantMaxInFlight: 4},
	}
	for _, c := range cases {
		r := &recorder{delay: 5 * time.Millisecond}
		if _, err := InSlowStart(context.Background(), c.n, c.start, c.limit, time.Time{}, r.call); err != nil {
			t.Fatal(err)
		}
		if r.maxInFlight != c.wantMaxInFlight {
			t.Errorf("n %d, start %d, limit %d: %d calls in flight at most, want %d", c.n, c.start, c.limit, r.maxInFlight, c.wantMaxInFlight)
		}
	}
}

// TestInSlowStartDoesNotWaitForItsSlowestCall: while one call hangs, the
// others go on through the rest of the window. Batches that wait for their
// slowest member would never reach item 5, which item 0 waits for.
func TestInSlowStartDoesNotWaitForItsSlowestCall(t *testing.T) {
	fifthStarted := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		_, err := InSlowStart(context.Background(), 10, 2, 2, time.Time{}, func(_ context.Context, item int) error {
			switch item {
			case 0:
				select {
				case <-fifthStarted:
				case <-time.After(5 * time.Second):
					return errors.New("item 5 never started while item 0 was in flight")
				}
			case 5:
				close(fifthStarted)
			}
			return nil
		})
		finished <- err
	}()
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
}

func TestInSlowStartStopsStartingCallsAfterItsTime(t *testing.T) {
	r := &recorder{delay: 20 * time.Millisecond}
	stopBy := time.Now().Add(50 * time.Millisecond)
	succeeded, err := InSlowStart(context.Background(), 100, 1, 1, stopBy, r.call)
	calls := len(r.called)
	if err != nil || succeeded != calls || calls < 2 || calls > 4 {
		t.Errorf("succeeded %d of %d calls, err %v; want the calls started within 50ms (about 3), no error", succeeded, calls, err)
	}
}

func TestInSlowStartStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{}
	succeeded, err := InSlowStart(ctx, 100, 1, 1, time.Time{}, func(ctx context.Context, item int) error {
		if item == 2 {
			cancel()
		}
		return r.call(ctx, item)
	})
	if err != nil || succeeded != 3 {
		t.Errorf("succeeded %d, err %v; want the 3 calls started before the context ended", succeeded, err)
	}
	if diff := cmp.Diff(map[int]int{0: 1, 1: 1, 2: 1}, r.called); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
