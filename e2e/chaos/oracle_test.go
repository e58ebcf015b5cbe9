package chaos

import (
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestExpectedEnd(t *testing.T) {
	succeeded := func(restarts int32) End {
		return End{Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, RestartCount: restarts}
	}
	budgetSpent := func(restarts int32) End {
		return End{Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: restarts}
	}
	for _, tc := range []struct {
		name        string
		failures    []int
		maxRestarts int32
		outlives    bool
		want        End
		wantErr     bool
	}{
		{name: "no failure", failures: []int{0}, want: succeeded(0)},
		{name: "no failure, three replicas, budget unused", failures: []int{0, 0, 0}, maxRestarts: 2, want: succeeded(0)},
		{name: "one failure within the budget", failures: []int{1}, maxRestarts: 1, want: succeeded(1)},
		{name: "failures of two replicas share the budget", failures: []int{1, 1}, maxRestarts: 2, want: succeeded(2)},
		{name: "uneven failures within the budget", failures: []int{2, 0, 1}, maxRestarts: 3, want: succeeded(3)},
		{name: "a failure with no budget", failures: []int{1}, maxRestarts: 0, want: budgetSpent(0)},
		{name: "one failure too many: the restarts judged before count", failures: []int{1, 1}, maxRestarts: 1, want: budgetSpent(1)},
		{name: "many failures too many", failures: []int{3, 3, 3}, maxRestarts: 2, want: budgetSpent(2)},
		{name: "outlives maxRuntime", failures: []int{0, 0}, maxRestarts: 2, outlives: true,
			want: End{Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}},
		{name: "outlives maxRuntime and fails: not computable", failures: []int{1}, maxRestarts: 2, outlives: true, wantErr: true},
		{name: "no replica", failures: nil, wantErr: true},
		{name: "negative budget", failures: []int{0}, maxRestarts: -1, wantErr: true},
		{name: "negative failures", failures: []int{-1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpectedEnd(tc.failures, tc.maxRestarts, tc.outlives)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ExpectedEnd = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ExpectedEnd: %v", err)
			}
			if got != tc.want {
				t.Errorf("ExpectedEnd = %s, want %s", got, tc.want)
			}
		})
	}
}
