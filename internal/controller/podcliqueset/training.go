package podcliqueset

import (
	"fmt"
	"sort"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// trainingInputs is what the restart-or-fail decision of a Training
// PodCliqueSet depends on, as plain values.
type trainingInputs struct {
	replicas   []replicaHealth
	inProgress map[int]bool
	// restartCount is status.restartCount before this pass.
	restartCount int32
	maxRestarts  int32
	// maxRuntime is nil when unlimited; startTime nil before the first run.
	maxRuntime       *time.Duration
	startTime        *time.Time
	terminationDelay time.Duration
	// failing: the Failed condition is already True; the decision is made
	// and the pods are being terminated.
	failing  bool
	terminal bool
	now      time.Time
}

// trainingDecision is what one pass does for a Training PodCliqueSet.
type trainingDecision struct {
	// restart lists the replicas to recreate, each consuming one restart.
	restart []int
	// restartCount is status.restartCount after this pass.
	restartCount int32
	// failReason is set when the workload fails in this pass
	// (copsev1alpha1.ReasonMaxRestartsExceeded or ReasonMaxRuntimeExceeded).
	failReason  string
	failMessage string
	// requeueAfter is when to look again without any event: the runtime
	// deadline, or the end of a breach's terminationDelay.
	requeueAfter time.Duration
}

// minRequeue stands in for a remaining time that is zero or negative (clock
// skew between the operator and the recorded startTime): look again soon,
// without busy looping.
const minRequeue = time.Second

// decideTraining applies GREP-0285's lifecycle rules:
//   - a terminal or already failing workload takes no new decision;
//   - past maxRuntime (from startTime, restarts included) it fails with
//     MaxRuntimeExceeded;
//   - every replica breached for at least terminationDelay (0 by default
//     for Training) restarts while restarts remain in the budget; the first
//     breach that would exceed maxRestarts fails the workload with
//     MaxRestartsExceeded instead, and then no replica restarts.
func decideTraining(in trainingInputs) trainingDecision {
	d := trainingDecision{restartCount: in.restartCount}
	if in.terminal || in.failing {
		return d
	}
	if in.maxRuntime != nil && in.startTime != nil {
		remaining := in.startTime.Add(*in.maxRuntime).Sub(in.now)
		if remaining <= 0 {
			d.failReason = copsev1alpha1.ReasonMaxRuntimeExceeded
			d.failMessage = fmt.Sprintf("maxRuntime %s elapsed since startTime %s", *in.maxRuntime, in.startTime.UTC().Format(time.RFC3339))
			return d
		}
		d.requeueAfter = remaining
	}

	due := decideGangTerminations(in.replicas, in.inProgress, in.terminationDelay, in.now)
	if due.requeueAfter > 0 && (d.requeueAfter == 0 || due.requeueAfter < d.requeueAfter) {
		d.requeueAfter = due.requeueAfter
	}
	sort.Ints(due.recreate)
	count := in.restartCount
	var restart []int
	for _, replica := range due.recreate {
		if count >= in.maxRestarts {
			d.failReason = copsev1alpha1.ReasonMaxRestartsExceeded
			d.failMessage = fmt.Sprintf("replica %d failed after %d of %d allowed restarts", replica, count, in.maxRestarts)
			return trainingDecision{restartCount: in.restartCount, failReason: d.failReason, failMessage: d.failMessage}
		}
		count++
		restart = append(restart, replica)
	}
	d.restart, d.restartCount = restart, count
	return d
}

// phaseInputs is what the phase of a PodCliqueSet depends on.
type phaseInputs struct {
	workloadType copsev1alpha1.WorkloadType
	previous     copsev1alpha1.PodCliqueSetPhase
	// failing: the Failed condition is True (decided in an earlier pass or this one).
	failing bool
	// activePods counts pods that have not ended, terminating ones included.
	activePods int
	// allSucceeded: every PodClique of every replica has Succeeded=True.
	allSucceeded bool
	// anyRunning: at least one replica is available (or done).
	anyRunning bool
}

// computePhase is the phase after this pass. Succeeded and Failed are
// terminal. Failed is entered only once no pod is left running, so the
// phase never claims a failure whose pods still hold GPUs. Running is kept
// once reached, while replicas restart: the workload has started, and its
// maxRuntime clock runs.
func computePhase(in phaseInputs) copsev1alpha1.PodCliqueSetPhase {
	if in.previous.IsTerminal() {
		return in.previous
	}
	if in.workloadType == copsev1alpha1.WorkloadTypeTraining {
		switch {
		case in.failing && in.activePods == 0:
			return copsev1alpha1.PodCliqueSetPhaseFailed
		case !in.failing && in.allSucceeded:
			return copsev1alpha1.PodCliqueSetPhaseSucceeded
		}
	}
	if in.anyRunning || in.previous == copsev1alpha1.PodCliqueSetPhaseRunning {
		return copsev1alpha1.PodCliqueSetPhaseRunning
	}
	return copsev1alpha1.PodCliqueSetPhasePending
}
