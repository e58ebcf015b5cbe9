package podcliqueset

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// minRequeue stands in for a remaining time that is zero or negative (clock
// skew between the operator and a recorded time): look again soon, without
// busy looping.
const minRequeue = time.Second

// recreationProgress is what this pass found of the recorded recreations.
type recreationProgress struct {
	// inProgress holds every replica with an unfinished recreation; its new
	// objects and pods are not created until the completion is recorded.
	inProgress map[int]bool
	// finished holds the replicas whose old run is entirely gone: every
	// recorded object and every pod of an earlier attempt.
	finished map[int]bool
	// remaining counts, per replica in progress, the objects and pods of the
	// old run still present.
	remaining map[int]int
	// barrierLifted holds the replicas restarted in place whose barrier
	// lifts now: the recreation completed, and no pod runs the old attempt.
	barrierLifted map[int]bool
}

// assessRecreations checks each recorded, unfinished recreation against
// what exists. A recreation is finished only when the old run's pods are
// gone too, not just its PodCliques and gangs: the new run's pods never
// meet the old run's, and the new gang never counts a dying pod.
//
// A restart in place moves the pods it keeps to the new attempt (they are
// no old-run pods then) and deletes the rest, so it finishes by the same
// rule. Its barrier lifts once it is finished and no pod runs the old
// attempt (barrierLifted).
func assessRecreations(recs []copsev1alpha1.ReplicaRecreation, objectUIDs map[types.UID]bool, pods []podstate.Summary) recreationProgress {
	p := recreationProgress{inProgress: map[int]bool{}, finished: map[int]bool{}, remaining: map[int]int{}, barrierLifted: map[int]bool{}}
	for _, rec := range recs {
		replica := int(rec.ReplicaIndex)
		if rec.CompletedAt != nil {
			if rec.InPlace && rec.BarrierLiftedAt == nil && barrierLifted(replicaPods(pods, replica), rec.Attempt) {
				p.barrierLifted[replica] = true
			}
			continue
		}
		p.inProgress[replica] = true
		remaining := 0
		for _, uid := range rec.Deleting {
			if objectUIDs[uid] {
				remaining++
			}
		}
		remaining += len(oldRunPods(pods, replica, rec.Attempt))
		if remaining == 0 {
			p.finished[replica] = true
		} else {
			p.remaining[replica] = remaining
		}
	}
	return p
}

// replicaPods are the replica's pods, of every attempt.
func replicaPods(pods []podstate.Summary, replica int) []podstate.Summary {
	var out []podstate.Summary
	for _, pod := range pods {
		if pod.Replica == replica {
			out = append(out, pod)
		}
	}
	return out
}

// oldRunPods are the replica's pods of attempts before attempt.
func oldRunPods(pods []podstate.Summary, replica int, attempt int32) []podstate.Summary {
	var out []podstate.Summary
	for _, pod := range pods {
		if pod.Replica == replica && pod.Attempt < int(attempt) {
			out = append(out, pod)
		}
	}
	return out
}

// terminationDecision says which replicas to recreate now and when to look
// again for breaches that have not yet lasted terminationDelay.
type terminationDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideGangTerminations picks the breached replicas whose breach has lasted
// longer than delay (Grove's gang termination). Replicas already being
// recreated are skipped: their breach is the one being handled.
func decideGangTerminations(replicas []replicaAssessment, inProgress map[int]bool, delay time.Duration, now time.Time) terminationDecision {
	var d terminationDecision
	for _, h := range replicas {
		if !h.breached || inProgress[h.index] {
			continue
		}
		remaining := h.breachedSince.Add(delay).Sub(now)
		if remaining <= 0 {
			d.recreate = append(d.recreate, h.index)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}

// trainingInputs is what the lifecycle decision of a Training PodCliqueSet
// depends on, as plain values.
type trainingInputs struct {
	replicas   []replicaAssessment
	inProgress map[int]bool
	// restartCount is status.restartCount before this pass, every
	// restart; uncountedRestarts the part of it made without spending
	// maxRestarts (status.uncountedRestarts).
	restartCount         int32
	uncountedRestarts    int32
	maxRestarts          int32
	maxUncountedRestarts int32
	// maxRuntime is nil when unlimited; startTime nil before the first run.
	maxRuntime       *time.Duration
	startTime        *time.Time
	terminationDelay time.Duration
	// failing: the Failed condition is already True; the decision is made
	// and the pods are being terminated.
	failing bool
	// successCriteriaMet: the SuccessCriteriaMet condition is already True;
	// the workload succeeds once its pods are gone, whatever they do.
	successCriteriaMet bool
	terminal           bool
	now                time.Time
}

// trainingDecision is what one pass decides for a Training PodCliqueSet.
type trainingDecision struct {
	// restart lists the replicas to recreate, each spending one of
	// maxRestarts; restartUncounted those a rule restarts without.
	restart          []int
	restartUncounted []int
	// restartCount and uncountedRestarts are their status fields after
	// this pass.
	restartCount      int32
	uncountedRestarts int32
	// verdicts are the failure rules' verdicts on the failures this pass
	// decided (restarts, and the one that fails the workload), in order.
	verdicts []lifecycle.RuleVerdict
	// failReason is set when the workload fails in this pass
	// (copsev1alpha1.ReasonMaxRestartsExceeded, ReasonMaxRuntimeExceeded,
	// ReasonFailedByRule or ReasonMaxUncountedRestartsExceeded).
	failReason  string
	failMessage string
	// causeReplica is the replica whose first failed pod is the root cause
	// of this pass's restart or failure; -1 when there is none.
	causeReplica int
	// requeueAfter is when to look again without any event: the runtime
	// deadline, or the end of a breach's terminationDelay.
	requeueAfter time.Duration
}

// decideTraining applies GREP-0285's lifecycle rules, judging every event by
// when it happened, not by when the operator saw it:
//
//   - A terminal or already failing workload takes no new decision, nor
//     one whose success criteria are met (SuccessCriteriaMet): nothing
//     fails it any more, neither a lingering pod nor maxRuntime.
//   - Success in time is success: when every replica succeeded and the last
//     pod exited 0 at or before startTime + maxRuntime, nothing fails, even
//     if the operator only sees it after the deadline.
//   - A replica that succeeded is never restarted. Breaches are judged one
//     at a time, in the order they became due (their start plus
//     terminationDelay; ties by replica index), each by the failure rules'
//     verdict on its root cause (replicaAssessment.verdict):
//     Ignore (only ignored pods failed) does nothing: the clique replaces
//     them; RestartReplica (no rule matched, or a rule said so) consumes one
//     restart while maxRestarts lasts, and the first that finds it spent
//     fails the workload with MaxRestartsExceeded; RestartReplicaWithoutCount
//     restarts without spending it while maxUncountedRestarts lasts, then
//     fails the workload with MaxUncountedRestartsExceeded; FailWorkload
//     fails it at once (FailedByRule). Only restarts made are counted: a
//     pass that fails the workload restarts nothing, so the restarts it
//     judged before the failure are neither made nor counted, and the
//     failure's verdict is the one recorded.
//   - A deadline that passed before a breach became due comes first: the
//     workload fails with MaxRuntimeExceeded and restarts, and counts,
//     nothing; its message names the restarts that were due before it.
func decideTraining(in trainingInputs) trainingDecision {
	d := trainingDecision{restartCount: in.restartCount, uncountedRestarts: in.uncountedRestarts, causeReplica: -1}
	if in.terminal || in.failing || in.successCriteriaMet {
		return d
	}
	var deadline *time.Time
	if in.maxRuntime != nil && in.startTime != nil {
		at := in.startTime.Add(*in.maxRuntime)
		deadline = &at
	}
	if succeededAt, ok := allSucceeded(in.replicas); ok && (deadline == nil || !succeededAt.After(*deadline)) {
		return d
	}

	type dueBreach struct {
		replica int
		at      time.Time
		verdict lifecycle.RuleVerdict
	}
	var due []dueBreach
	var nextDue time.Time
	for _, r := range in.replicas {
		// A replica that succeeded (met the success policy) keeps its
		// result: a lingering pod's failure does not restart it.
		if !r.breached || r.succeeded || in.inProgress[r.index] {
			continue
		}
		at := r.breachedSince.Add(in.terminationDelay)
		if at.After(in.now) {
			if nextDue.IsZero() || at.Before(nextDue) {
				nextDue = at
			}
			continue
		}
		due = append(due, dueBreach{replica: r.index, at: at, verdict: r.verdict})
	}
	slices.SortFunc(due, func(a, b dueBreach) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.replica, b.replica)
	})

	pastDeadline := deadline != nil && !in.now.Before(*deadline)
	total, uncounted := in.restartCount, in.uncountedRestarts
	var restart, restartUncounted []int
	var verdicts []lifecycle.RuleVerdict
	fail := func(verdict lifecycle.RuleVerdict, reason, message string) trainingDecision {
		d.verdicts = []lifecycle.RuleVerdict{verdict}
		d.failReason, d.failMessage = reason, message+notMade(restart, restartUncounted)
		return d
	}
	for _, b := range due {
		if pastDeadline && !b.at.Before(*deadline) {
			break
		}
		verdict := b.verdict
		if verdict.Action == copsev1alpha1.FailureActionIgnore {
			// An ignored failure restarts nothing and spends no budget;
			// its clique replaces the pod.
			continue
		}
		d.causeReplica = b.replica
		switch verdict.Action {
		case copsev1alpha1.FailureActionFailWorkload:
			return fail(verdict, copsev1alpha1.ReasonFailedByRule, fmt.Sprintf("replica %d failed and failurePolicy rule %q (FailWorkload) matched: no restart", b.replica, verdict.Rule))
		case copsev1alpha1.FailureActionRestartReplicaWithoutCount:
			if uncounted >= in.maxUncountedRestarts {
				return fail(verdict, copsev1alpha1.ReasonMaxUncountedRestartsExceeded, fmt.Sprintf(
					"replica %d failed and failurePolicy rule %q (RestartReplicaWithoutCount) matched after %d of %d allowed uncounted restarts",
					b.replica, verdict.Rule, uncounted, in.maxUncountedRestarts))
			}
			uncounted++
			total++
			restartUncounted = append(restartUncounted, b.replica)
			verdicts = append(verdicts, verdict)
		default:
			if counted := total - uncounted; counted >= in.maxRestarts {
				return fail(verdict, copsev1alpha1.ReasonMaxRestartsExceeded, fmt.Sprintf("replica %d failed after %d of %d allowed restarts%s",
					b.replica, counted, in.maxRestarts, ruleNote(verdict)))
			}
			total++
			restart = append(restart, b.replica)
			verdicts = append(verdicts, verdict)
		}
	}
	if pastDeadline {
		d.failReason = copsev1alpha1.ReasonMaxRuntimeExceeded
		d.failMessage = fmt.Sprintf("maxRuntime %s elapsed at %s, %s after startTime %s",
			*in.maxRuntime, deadline.UTC().Format(time.RFC3339), *in.maxRuntime, in.startTime.UTC().Format(time.RFC3339))
		d.failMessage += notMade(restart, restartUncounted)
		return d
	}
	d.restartCount, d.uncountedRestarts, d.verdicts = total, uncounted, verdicts
	d.restart, d.restartUncounted = restart, restartUncounted
	if deadline != nil {
		d.requeueAfter = max(deadline.Sub(in.now), minRequeue)
	}
	if !nextDue.IsZero() && (d.requeueAfter == 0 || nextDue.Sub(in.now) < d.requeueAfter) {
		d.requeueAfter = max(nextDue.Sub(in.now), minRequeue)
	}
	return d
}

// notMade is what a failure's message says of the restarts judged before
// it in the same pass: they are not made, and so not counted, but they
// spent the budget the failure found spent.
func notMade(restart, restartUncounted []int) string {
	due := append(slices.Clone(restart), restartUncounted...)
	if len(due) == 0 {
		return ""
	}
	slices.Sort(due)
	return fmt.Sprintf("; the restart of replica(s) %v, due before it, is not made (and not counted): the workload fails", due)
}

// ruleNote is " (failurePolicy rule <name>)" for a verdict of a rule, ""
// for the default one.
func ruleNote(v lifecycle.RuleVerdict) string {
	if v.Rule == "" {
		return ""
	}
	return fmt.Sprintf(" (failurePolicy rule %q)", v.Rule)
}

// allSucceeded reports whether every replica succeeded, and when the last
// one did.
func allSucceeded(replicas []replicaAssessment) (time.Time, bool) {
	var last time.Time
	for _, r := range replicas {
		if !r.succeeded {
			return time.Time{}, false
		}
		if r.succeededAt.After(last) {
			last = r.succeededAt
		}
	}
	return last, len(replicas) > 0
}

// phaseInputs is what the phase of a PodCliqueSet depends on.
type phaseInputs struct {
	training bool
	previous copsev1alpha1.PodCliqueSetPhase
	// failing: the Failed condition is True (decided in an earlier pass or this one).
	failing bool
	// activePods counts pods that have not ended, terminating ones included.
	activePods int
	// succeeded: every replica succeeded, in time.
	succeeded bool
	// started: at least one replica's base gang started, or succeeded.
	started bool
	// suspended: spec.suspend is true.
	suspended bool
	// successCriteriaMet: the SuccessCriteriaMet condition is True (set in
	// an earlier pass or this one).
	successCriteriaMet bool
}

// computePhase is the phase after this pass. Succeeded and Failed are
// terminal. Failed is entered only once no pod is left running, so the
// phase never claims a failure whose pods still hold GPUs; likewise
// Succeeded after a success policy was met (SuccessCriteriaMet), which no
// failure overrides. Running is entered when a replica's pods started,
// ready or not, and kept while replicas restart: the workload has started,
// and its maxRuntime clock runs. A suspended workload with no pod left is
// Pending: it waits to be resumed, as a new one waits to be scheduled.
func computePhase(in phaseInputs) copsev1alpha1.PodCliqueSetPhase {
	if in.previous.IsTerminal() {
		return in.previous
	}
	if in.training {
		switch {
		case in.successCriteriaMet:
			if in.activePods == 0 {
				return copsev1alpha1.PodCliqueSetPhaseSucceeded
			}
		case in.failing && in.activePods == 0:
			return copsev1alpha1.PodCliqueSetPhaseFailed
		case !in.failing && in.succeeded:
			return copsev1alpha1.PodCliqueSetPhaseSucceeded
		}
	}
	if in.suspended && in.activePods == 0 {
		return copsev1alpha1.PodCliqueSetPhasePending
	}
	if in.started || in.previous == copsev1alpha1.PodCliqueSetPhaseRunning {
		return copsev1alpha1.PodCliqueSetPhaseRunning
	}
	return copsev1alpha1.PodCliqueSetPhasePending
}

// passDecision is what one pass decided, for either workload type.
type passDecision struct {
	// ended: the workload had ended when the pass read it (the records
	// decide was given); no placement or barrier decision is made then.
	ended    bool
	recreate []int
	reason   copsev1alpha1.RecreationReason
	// recreateUncounted are Training restarts that spend no unit of
	// maxRestarts (reason UncountedRestart).
	recreateUncounted []int
	restartCount      int32
	uncountedRestarts int32
	verdicts          []lifecycle.RuleVerdict
	failReason        string
	failMessage       string
	// causeReplica is the replica whose root cause status.lastFailure
	// records; -1 when this pass records none.
	causeReplica int
	requeueAfter time.Duration
}

// decide gathers the inputs of the workload type's pure decision function.
// startTime is the workload's start as this pass sets it (nil before);
// currentRun holds the replicas with objects or pods of their current run.
// An Inference replica a rolling update is replacing (currentlyUpdating)
// is not gang-terminated. A suspended workload that has not ended takes no other decision than its
// suspensions: no gang termination, restart or failure, and no restart is
// consumed.
func decide(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, replicas []replicaAssessment, inProgress, currentRun map[int]bool, startTime *time.Time, now time.Time) passDecision {
	if rec.Suspended && !rec.Ended {
		return passDecision{recreate: decideSuspensions(replicas, inProgress, currentRun), reason: copsev1alpha1.RecreationReasonSuspension,
			restartCount: pcs.Status.RestartCount, uncountedRestarts: pcs.Status.UncountedRestarts, causeReplica: -1, ended: rec.Ended}
	}
	if !pcs.IsTraining() {
		// The replica a rolling update is replacing is below minAvailable
		// on purpose; as in Grove, gang termination leaves it to the update.
		exempt := maps.Clone(inProgress)
		if exempt == nil {
			exempt = map[int]bool{}
		}
		if p := pcs.Status.UpdateProgress; rollingUpdateInProgress(p) && !onDelete(pcs) && len(p.CurrentlyUpdating) > 0 {
			exempt[int(p.CurrentlyUpdating[0].ReplicaIndex)] = true
		}
		g := decideGangTerminations(replicas, exempt, pcs.TerminationDelay(), now)
		return passDecision{recreate: g.recreate, reason: copsev1alpha1.RecreationReasonGangTermination,
			restartCount: pcs.Status.RestartCount, uncountedRestarts: pcs.Status.UncountedRestarts, causeReplica: -1, requeueAfter: g.requeueAfter, ended: rec.Ended}
	}
	t := decideTraining(trainingInputs{
		replicas:             replicas,
		inProgress:           inProgress,
		restartCount:         pcs.Status.RestartCount,
		uncountedRestarts:    pcs.Status.UncountedRestarts,
		maxRestarts:          pcs.MaxRestarts(),
		maxUncountedRestarts: pcs.MaxUncountedRestarts(),
		maxRuntime:           pcs.MaxRuntime(),
		startTime:            startTime,
		terminationDelay:     pcs.TerminationDelay(),
		failing:              isFailing(pcs),
		successCriteriaMet:   successCriteriaMet(pcs),
		terminal:             pcs.Status.Phase.IsTerminal(),
		now:                  now,
	})
	return passDecision{recreate: t.restart, reason: copsev1alpha1.RecreationReasonTrainingRestart, recreateUncounted: t.restartUncounted,
		restartCount: t.restartCount, uncountedRestarts: t.uncountedRestarts, verdicts: t.verdicts, failReason: t.failReason, failMessage: t.failMessage,
		causeReplica: t.causeReplica, requeueAfter: t.requeueAfter, ended: rec.Ended}
}

// startTimeInputs is what status.startTime depends on.
type startTimeInputs struct {
	// recorded is status.startTime before this pass.
	recorded  *time.Time
	suspended bool
	// resumedAt is when the workload was last resumed; zero if never.
	resumedAt time.Time
	replicas  []replicaAssessment
	now       time.Time
}

// computeStartTime is status.startTime as this pass sets it: kept once
// set; otherwise, once a replica started or succeeded, the earliest
// container start among those replicas, so that operator downtime at the
// start does not extend maxRuntime. nil while nothing started, and while
// suspended: a suspended workload's start is the resumed one's. After a
// resume it is never earlier than the resume, so time spent suspended
// never counts against maxRuntime, not even through a replica that
// succeeded before the suspension.
func computeStartTime(in startTimeInputs) *time.Time {
	if in.recorded != nil {
		t := *in.recorded
		return &t
	}
	if in.suspended {
		return nil
	}
	var earliest time.Time
	anyStarted := false
	for _, r := range in.replicas {
		if !r.started && !r.succeeded {
			continue
		}
		anyStarted = true
		if !r.startedAt.IsZero() && (earliest.IsZero() || r.startedAt.Before(earliest)) {
			earliest = r.startedAt
		}
	}
	if !anyStarted {
		return nil
	}
	if earliest.IsZero() || earliest.After(in.now) {
		earliest = in.now
	}
	if earliest.Before(in.resumedAt) {
		earliest = in.resumedAt
	}
	return &earliest
}

// startTimeCandidate is computeStartTime for pcs.
func startTimeCandidate(pcs *copsev1alpha1.PodCliqueSet, replicas []replicaAssessment, now time.Time) *time.Time {
	in := startTimeInputs{suspended: pcs.IsSuspended(), resumedAt: resumedAt(pcs), replicas: replicas, now: now}
	if pcs.Status.StartTime != nil {
		in.recorded = &pcs.Status.StartTime.Time
	}
	return computeStartTime(in)
}
