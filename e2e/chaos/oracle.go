package chaos

import (
	"errors"
	"fmt"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// End is how a Training workload ends: its terminal phase, the reason of
// its Failed condition ("" when it succeeded) and status.restartCount.
type End struct {
	Phase        copsev1alpha1.PodCliqueSetPhase
	Reason       string
	RestartCount int32
}

func (e End) String() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s/%d", e.Phase, e.RestartCount)
	}
	return fmt.Sprintf("%s(%s)/%d", e.Phase, e.Reason, e.RestartCount)
}

// ExpectedEnd is the oracle: the end docs/training.md prescribes for a
// workload whose replica r fails its first failures[r] runs and succeeds on
// the next, with a restart budget of maxRestarts shared by all replicas.
// Every failure is a breach that needs a restart; breaches are judged one
// at a time, each consuming one restart while the budget lasts, and the
// first that finds the budget spent fails the workload (the restarts judged
// before it still count). outlivesMaxRuntime says that the pods run past
// maxRuntime; the oracle supports that only without failures, where the
// workload fails with MaxRuntimeExceeded and no restart.
func ExpectedEnd(failures []int, maxRestarts int32, outlivesMaxRuntime bool) (End, error) {
	if len(failures) == 0 {
		return End{}, errors.New("expected end: a Training workload has at least one replica")
	}
	if maxRestarts < 0 {
		return End{}, fmt.Errorf("expected end: maxRestarts %d is negative", maxRestarts)
	}
	breaches := 0
	for r, f := range failures {
		if f < 0 {
			return End{}, fmt.Errorf("expected end: replica %d fails %d times, a negative count", r, f)
		}
		breaches += f
	}
	if outlivesMaxRuntime {
		if breaches > 0 {
			return End{}, errors.New("expected end: a workload that outlives maxRuntime must not fail too: " +
				"which restarts count then depends on when each failure happened")
		}
		return End{Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}, nil
	}
	if breaches <= int(maxRestarts) {
		return End{Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, RestartCount: int32(breaches)}, nil
	}
	return End{Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: maxRestarts}, nil
}
