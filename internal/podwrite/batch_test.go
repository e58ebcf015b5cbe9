package podwrite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBatchSizes(t *testing.T) {
	cases := []struct {
		n, start, limit int
		want            []int
	}{
		{0, 1, 8, nil},
		{1, 1, 8, []int{1}},
		{10, 1, 8, []int{1, 2, 4, 3}},
		{20, 1, 4, []int{1, 2, 4, 4, 4, 4, 1}},
		{2, 1, 0, []int{1, 1}},
		{20, 8, 8, []int{8, 8, 4}},
		{20, 16, 8, []int{8, 8, 4}},
		{5, 0, 8, []int{1, 2, 2}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, batchSizes(c.n, c.start, c.limit)); diff != "" {
			t.Errorf("batchSizes(%d, %d, %d) (-want +got):\n%s", c.n, c.start, c.limit, diff)
		}
	}
}

func TestInSlowStartBatches(t *testing.T) {
	cases := []struct {
		name          string
		n             int
		failing       map[int]bool
		wantCalled    int // items 0..wantCalled-1 are called, no others
		wantSucceeded int
		wantErr       bool
	}{
		{name: "nothing to do", n: 0},
		{name: "every item once", n: 10, wantCalled: 10, wantSucceeded: 10},
		{name: "the first call fails: nothing more is tried", n: 10, failing: map[int]bool{0: true},
			wantCalled: 1, wantErr: true},
		{name: "a failure in the third batch ends the run after that batch", n: 10, failing: map[int]bool{4: true},
			wantCalled: 7, wantSucceeded: 6, wantErr: true},
		{name: "every failure of the batch is reported", n: 10, failing: map[int]bool{1: true, 2: true},
			wantCalled: 3, wantSucceeded: 1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			called := map[int]int{}
			succeeded, err := InSlowStartBatches(context.Background(), c.n, 1, 8, time.Time{}, func(_ context.Context, item int) error {
				mu.Lock()
				called[item]++
				mu.Unlock()
				if c.failing[item] {
					return errors.New("boom")
				}
				return nil
			})
			want := map[int]int{}
			for i := range c.wantCalled {
				want[i] = 1
			}
			if diff := cmp.Diff(want, called); diff != "" {
				t.Errorf("calls per item (-want +got):\n%s", diff)
			}
			if succeeded != c.wantSucceeded || (err != nil) != c.wantErr {
				t.Errorf("succeeded %d, err %v; want %d, error %v", succeeded, err, c.wantSucceeded, c.wantErr)
			}
			if n := len(failures(err)); n != len(c.failing) && c.wantErr {
				t.Errorf("%d failures reported, want %d", n, len(c.failing))
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

func TestInSlowStartBatchesRunsABatchConcurrently(t *testing.T) {
	// Batches of 7 items with limit 4 are 1, 2, 4: the calls of the last
	// batch (items 3..6) wait for one another, which only finishes if they
	// run at the same time.
	var barrier sync.WaitGroup
	barrier.Add(4)
	_, err := InSlowStartBatches(context.Background(), 7, 1, 4, time.Time{}, func(_ context.Context, item int) error {
		if item >= 3 {
			barrier.Done()
			barrier.Wait()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestInSlowStartBatchesStopsStartingBatchesAfterItsTime(t *testing.T) {
	calls := 0
	stopBy := time.Now().Add(50 * time.Millisecond)
	succeeded, err := InSlowStartBatches(context.Background(), 100, 1, 1, stopBy, func(context.Context, int) error {
		calls++
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	if err != nil || succeeded != calls || calls < 2 || calls > 4 {
		t.Errorf("succeeded %d of %d calls, err %v; want the batches started within 50ms (about 3), no error", succeeded, calls, err)
	}
}
