package children

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBudget(t *testing.T) {
	b := NewBudget(5)
	if !b.Take(2) || b.Exhausted() {
		t.Fatal("2 of 5 must fit")
	}
	if got := Cut(b, make([]int, 4)); len(got) != 3 || !b.Exhausted() {
		t.Errorf("cut to %d, exhausted %v; want the 3 that fit, and the rest left", len(got), b.Exhausted())
	}
	if b.Take(1) {
		t.Error("nothing is left")
	}
	if got := Cut(NewBudget(10), make([]string, 4)); len(got) != 4 {
		t.Errorf("cut %d of 4 within budget", len(got))
	}
	b = NewBudget(3)
	b.spend(2, false)
	if b.Remaining() != 1 || b.Exhausted() {
		t.Errorf("after spending 2 of 3: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
	b.spend(1, true)
	if b.Remaining() != 0 || !b.Exhausted() {
		t.Errorf("a plan cut short leaves the budget exhausted: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
}

// The cut hook runs once per pass, however many writes are left out, and
// never for a pass that fits.
func TestBudgetCallsOnCutOnce(t *testing.T) {
	cuts := 0
	count := func() { cuts++ }
	b := NewBudget(2).OnCut(count)
	Cut(b, make([]int, 2))
	if cuts != 0 {
		t.Fatalf("a pass that fits was counted as cut %d times", cuts)
	}
	b.Take(1)
	Cut(b, make([]int, 3))
	b.spend(0, true)
	if cuts != 1 {
		t.Errorf("a pass cut three times was counted %d times; want once", cuts)
	}
	if NewBudget(0).Take(1) {
		t.Error("a budget of 0 takes nothing")
	}
}

// recorder is an fn for InSlowStart that counts calls per item and the
// most calls it saw in flight at once.
type recorder struct {
	mu                    sync.Mutex
	called                map[int]int
	inFlight, maxInFlight int
	failing               map[int]bool
	delay                 time.Duration
	// failed is closed when the first failing item's call returns; calls
	// of later items wait for it, so how many start before the failure is
	// seen depends on the window and not on how the goroutines are
	// scheduled.
	failed     chan struct{}
	failedOnce sync.Once
}

func newRecorder(failing map[int]bool, delay time.Duration) *recorder {
	return &recorder{failing: failing, delay: delay, failed: make(chan struct{})}
}

// afterAFailure says whether item comes after a failing item.
func (r *recorder) afterAFailure(item int) bool {
	for failing := range r.failing {
		if failing < item {
			return true
		}
	}
	return false
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
	if !r.failing[item] && r.afterAFailure(item) {
		<-r.failed
	}
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if r.failing[item] {
		r.failedOnce.Do(func() { close(r.failed) })
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
		// Calls after the failing one hold their window slot until it
		// returns, so at most the rest of its window (7) starts before it
		// and the run stops well before n. The exact rule (no call starts
		// once a failure is recorded) is TestSlowStartAdmitsNothingAfterAFailure.
		{name: "a failure stops the run", n: 100, start: 1, failing: map[int]bool{20: true},
			wantCalledMin: 21, wantCalledMax: 99, wantSucceeded: -1, wantErr: true},
		{name: "a failing first window reports each failure", n: 100, start: 8, failing: map[int]bool{1: true, 2: true},
			wantCalledMin: 8, wantCalledMax: 99, wantSucceeded: -1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder(c.failing, time.Millisecond)
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

// TestInSlowStartGrowsItsWindowLikeBatches: the calls run concurrently and
// never more than the window allows. How the window grows is checked exactly
// in TestSlowStartAdmitsNothingAfterAFailure; here only the bound is exact,
// because how many calls overlap also depends on goroutine scheduling.
func TestInSlowStartGrowsItsWindowLikeBatches(t *testing.T) {
	cases := []struct{ n, start, limit, wantMaxInFlight int }{
		{n: 1, start: 1, limit: 8, wantMaxInFlight: 1},
		{n: 2, start: 1, limit: 8, wantMaxInFlight: 1}, // the second call starts after the first succeeded
		{n: 3, start: 1, limit: 8, wantMaxInFlight: 2},
		{n: 200, start: 1, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 16, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 4, limit: 4, wantMaxInFlight: 4},
	}
	for _, c := range cases {
		r := newRecorder(nil, 5*time.Millisecond)
		if _, err := InSlowStart(context.Background(), c.n, c.start, c.limit, time.Time{}, r.call); err != nil {
			t.Fatal(err)
		}
		if r.maxInFlight > c.wantMaxInFlight {
			t.Errorf("n %d, start %d, limit %d: %d calls in flight at once, want at most %d", c.n, c.start, c.limit, r.maxInFlight, c.wantMaxInFlight)
		}
		if c.n >= 100 && r.maxInFlight < 2 {
			t.Errorf("n %d, start %d, limit %d: the calls never overlapped", c.n, c.start, c.limit)
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

// TestSlowStartAdmitsNothingAfterAFailure drives the window by hand: it
// grows 1, 2, 4, 8 with successes, and once a failure is recorded no call is
// admitted although the window has room.
func TestSlowStartAdmitsNothingAfterAFailure(t *testing.T) {
	s := newSlowStart(1, 8)
	var windows []int
	for range 7 {
		if !s.admit(time.Time{}) {
			t.Fatal("admit refused a call before any failure")
		}
		s.done(nil)
		windows = append(windows, s.window)
	}
	if diff := cmp.Diff([]int{2, 2, 4, 4, 4, 4, 8}, windows); diff != "" {
		t.Errorf("window after each success (-want +got):\n%s", diff)
	}
	if s.admit(time.Now().Add(-time.Second)) {
		t.Error("admit let a call start past stopBy")
	}
	for range 3 {
		if !s.admit(time.Time{}) {
			t.Fatal("admit refused a call with room in the window")
		}
	}
	s.done(errors.New("boom"))
	if s.admit(time.Time{}) {
		t.Error("admit let a call start after a failure")
	}
	if s.inFlight != 2 {
		t.Errorf("%d calls in flight, want the 2 admitted before the failure", s.inFlight)
	}
}
