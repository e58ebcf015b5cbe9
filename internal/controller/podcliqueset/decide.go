package podcliqueset

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
)

// minRequeue stands in for a remaining time that is zero or negative (clock
// skew between the operator and a recorded time): look again soon, without
// busy looping.
const minRequeue = time.Second

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
		delay, onDelete := pcs.TerminationDelay(), pcs.UpdatesOnDelete()
		if p := pcs.Status.UpdateProgress; !onDelete && rollingUpdateInProgress(p) && len(p.CurrentlyUpdating) > 0 {
			exempt[int(p.CurrentlyUpdating[0].ReplicaIndex)] = true
		}
		g := decideGangTerminations(replicas, exempt, delay, now)
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

// decideSuspensions picks the replicas a suspension recreates now: those
// that have not succeeded (their result stays), are not already being
// recreated (the recreation in progress removes their run all the same),
// and still have objects or pods of their current run (currentRun). A
// replica whose run is gone has nothing left to suspend: it gets nothing
// new while suspended, so it is never recreated twice.
func decideSuspensions(replicas []replicaAssessment, inProgress, currentRun map[int]bool) []int {
	var out []int
	for _, r := range replicas {
		if !r.succeeded && !inProgress[r.index] && currentRun[r.index] {
			out = append(out, r.index)
		}
	}
	return out
}

// succeededReplicas are the replicas that succeeded, as an index set.
func succeededReplicas(replicas []replicaAssessment) indexset.Set {
	out := indexset.Set{}
	for _, r := range replicas {
		if r.succeeded {
			out.Add(r.index)
		}
	}
	return out
}

// resumedAt is when the workload was last resumed; zero when it never was.
func resumedAt(pcs *copsev1alpha1.PodCliqueSet) time.Time {
	cond := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuspended)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != copsev1alpha1.ReasonResumed {
		return time.Time{}
	}
	return cond.LastTransitionTime.Time
}

// gangFacts is what the PodGangsScheduled verdict and the bound on an
// incomplete placement need of one gang of a replica's current run, as
// plain values. A PodGroup has one minCount over all of its cliques, so
// whether the gang is placed, and whether each clique got its minAvailable,
// are read from the run's own pods.
type gangFacts struct {
	name    string
	replica int
	// minCount is the PodGroup's gang minCount (at least 1).
	minCount int
	// verdict is the PodGroup's PodGroupInitiallyScheduled condition when
	// it speaks for the current run: nil when there is none yet, or when it
	// is older than the run (a PodGroup a suspension kept; the scheduler
	// gives a PodGroup that verdict once).
	verdict *metav1.Condition
	// placed counts the member cliques' indices placed in this run (a pod
	// on a node or ended, or an index that exited 0); placedAt is when the
	// latest of their pods was placed.
	placed   int
	placedAt time.Time
	// unschedulable is one of its pods' scheduler message, "" if none.
	unschedulable string
	// short describes each member clique placed below its minAvailable,
	// e.g. "job-0-leader (0 of minAvailable 1 placed)".
	short []string
	// after is the base gang a scaled gang is placed after: its pods are
	// held in that gang's domain (blueprint.HeldToBaseGang), so the
	// scheduler finds no node for them until the base gang is placed. ""
	// for other gangs.
	after string
}

// isPlaced: minCount of the gang's pods are on nodes (or ran).
func (g gangFacts) isPlaced() bool { return g.placed >= g.minCount }

// incomplete: placed, but some clique has fewer pods placed than its
// minAvailable (the scheduler filled minCount with the other cliques).
func (g gangFacts) incomplete() bool { return g.isPlaced() && len(g.short) > 0 }

// gangFactsOf gathers the gangs of the replicas' current runs: the gang
// PodGroups of replicas that are not being recreated, with their member
// PodCliques (labelled with the gang) and their pods of the current
// attempt. None while the workload is suspended: there is no run to place.
func gangFactsOf(pcs *copsev1alpha1.PodCliqueSet, obs *observed, gangKind string, inProgress map[int]bool) []gangFacts {
	if gangKind == "" || pcs.IsSuspended() {
		return nil
	}
	var out []gangFacts
	for replica := range int(pcs.Spec.Replicas) {
		if inProgress[replica] {
			continue
		}
		attempt := int(obs.records.Attempt(replica))
		for _, obj := range obs.replicas[replica].byKind[gangKind] {
			pg, ok := obj.(*schedulingv1beta1.PodGroup)
			if !ok || pg.Spec.SchedulingPolicy.Gang == nil || !pg.DeletionTimestamp.IsZero() {
				continue
			}
			out = append(out, gangFactsOfGroup(pcs, obs, pg, replica, attempt))
		}
	}
	return out
}

// gangFactsOfGroup gathers one gang PodGroup's facts from its member
// PodCliques of the replica's current run (attempt) and their pods.
func gangFactsOfGroup(pcs *copsev1alpha1.PodCliqueSet, obs *observed, pg *schedulingv1beta1.PodGroup, replica, attempt int) gangFacts {
	g := gangFacts{name: pg.Name, replica: replica, minCount: max(int(pg.Spec.SchedulingPolicy.Gang.MinCount), 1)}
	if ref := pg.Spec.WorkloadRef; ref != nil && blueprint.HeldToBaseGang(obs.packing, ref.TemplateName) {
		g.after = naming.BaseGang(pcs.Name, replica)
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); c != nil &&
		!c.LastTransitionTime.Time.Before(runStart(pcs, replica)) {
		g.verdict = c
	}
	for _, pclq := range obs.replicas[replica].runs[attempt].podCliques {
		if pclq.Labels[labels.PodGangKey] != pg.Name || !pclq.DeletionTimestamp.IsZero() {
			continue
		}
		placed := lifecycle.RecordedSucceeded(pclq)
		for _, p := range obs.podsByClique[pclq.Name] {
			if p.ControllerUID != pclq.UID || p.Attempt != attempt {
				continue
			}
			if p.Unschedulable != "" && g.unschedulable == "" {
				g.unschedulable = p.Unschedulable
			}
			if !p.Scheduled && !p.Terminal() {
				continue
			}
			if p.HasIndex {
				placed.Add(p.Index)
			}
			if p.ScheduledAt.After(g.placedAt) {
				g.placedAt = p.ScheduledAt
			}
		}
		g.placed += len(placed)
		if need := int(pclq.MinAvailable()); len(placed) < need {
			g.short = append(g.short, fmt.Sprintf("%s (%d of minAvailable %d placed)", pclq.Name, len(placed), need))
		}
	}
	if g.placedAt.IsZero() && g.verdict != nil && g.verdict.Status == metav1.ConditionTrue {
		g.placedAt = g.verdict.LastTransitionTime.Time
	}
	return g
}

// runStart is when the replica's current run began: its latest recreation's
// completion, or the resume after a suspension, whichever is later; zero
// for a first run.
func runStart(pcs *copsev1alpha1.PodCliqueSet, replica int) time.Time {
	start := resumedAt(pcs)
	for _, rec := range pcs.Status.ReplicaRecreations {
		if int(rec.ReplicaIndex) == replica && rec.CompletedAt != nil && rec.CompletedAt.After(start) {
			start = rec.CompletedAt.Time
		}
	}
	return start
}

// placementDecision is which replicas to recreate for a placement that
// stayed incomplete, and when to look again for one that has not yet.
type placementDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideIncompletePlacements picks the replicas with a gang placed
// incomplete for timeout or longer (since its latest pod was placed): their
// pods hold nodes for a gang that cannot run, so the replica is recreated,
// without consuming a restart, and placed again. skip holds the replicas
// that take no such decision (being recreated, succeeded, decided otherwise
// this pass, or replaced by a rolling update).
func decideIncompletePlacements(gangs []gangFacts, skip map[int]bool, timeout time.Duration, now time.Time) placementDecision {
	var d placementDecision
	seen := map[int]bool{}
	for _, g := range gangs {
		if !g.incomplete() || skip[g.replica] || seen[g.replica] {
			continue
		}
		remaining := g.placedAt.Add(timeout).Sub(now)
		if remaining <= 0 {
			seen[g.replica] = true
			d.recreate = append(d.recreate, g.replica)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}

// decidePlacement is decideIncompletePlacements for pcs in this pass: no
// replica of an ended workload, none being recreated or decided otherwise
// this pass, none that succeeded, and not the replica a rolling update is
// replacing.
func decidePlacement(pcs *copsev1alpha1.PodCliqueSet, gangs []gangFacts, replicas []replicaAssessment, inProgress map[int]bool,
	d passDecision, timeout time.Duration, now time.Time) placementDecision {
	if timeout <= 0 || d.ended || d.failReason != "" {
		return placementDecision{}
	}
	skip := maps.Clone(inProgress)
	if skip == nil {
		skip = map[int]bool{}
	}
	for _, r := range slices.Concat(d.recreate, d.recreateUncounted) {
		skip[r] = true
	}
	for _, a := range replicas {
		if a.succeeded {
			skip[a.index] = true
		}
	}
	if p := pcs.Status.UpdateProgress; rollingUpdateInProgress(p) && len(p.CurrentlyUpdating) > 0 {
		skip[int(p.CurrentlyUpdating[0].ReplicaIndex)] = true
	}
	return decideIncompletePlacements(gangs, skip, timeout, now)
}

// barrierDecision is what this pass decides about restarts in place whose
// barrier has not lifted: the replicas to recreate, and when to look again
// for the others.
type barrierDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideBarriers is overdueBarriers for pcs in this pass: nothing for an
// ended workload, and no replica that is decided otherwise this pass.
func decideBarriers(pcs *copsev1alpha1.PodCliqueSet, d passDecision, placement placementDecision, timeout time.Duration, now time.Time) barrierDecision {
	if timeout <= 0 || d.ended || d.failReason != "" {
		return barrierDecision{}
	}
	skip := map[int]bool{}
	for _, replica := range slices.Concat(d.recreate, d.recreateUncounted, placement.recreate) {
		skip[replica] = true
	}
	return overdueBarriers(pcs.Status.ReplicaRecreations, skip, timeout, now)
}

// overdueBarriers picks the replicas whose restart in place has held its
// barrier for timeout or longer since it was decided: a kept pod whose
// kubelet never restarts its containers (its restart agent lost while the
// pod still runs) would keep every gate of the replica closed, and its
// nodes held, for good. Such a replica is recreated, without consuming a
// restart. Only a restart whose old run is gone (CompletedAt) is picked: a
// new record replaces the old one, which must have nothing left to delete.
// skip holds the replicas decided otherwise this pass.
func overdueBarriers(recs []copsev1alpha1.ReplicaRecreation, skip map[int]bool, timeout time.Duration, now time.Time) barrierDecision {
	var d barrierDecision
	for _, rec := range recs {
		replica := int(rec.ReplicaIndex)
		if !rec.InPlace || rec.BarrierLiftedAt != nil || skip[replica] {
			continue
		}
		remaining := rec.StartedAt.Add(timeout).Sub(now)
		if remaining <= 0 && rec.CompletedAt != nil {
			d.recreate = append(d.recreate, replica)
			continue
		}
		remaining = max(remaining, minRequeue)
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}

// recreationAsk is what one decision of the pass asks for: replicas to
// recreate, for reason.
type recreationAsk struct {
	replicas []int
	reason   copsev1alpha1.RecreationReason
}

// decideRecreations is the one place a recreation is decided: for every
// replica an ask names, its new attempt, its reason, whether it restarts
// in place (restartsInPlace), and the objects of its current run that go
// with it (the UIDs of every object of a row the reason deletes,
// ReplicaResource.DeletedBy). Nothing is deleted here: the recreation is
// written to status first, and its writes (planWrites) follow from the
// status as written; the old run's pods are found by their attempt label.
func decideRecreations(pcs *copsev1alpha1.PodCliqueSet, obs *observed, rows []blueprint.ReplicaResource, now time.Time,
	asks ...recreationAsk) []copsev1alpha1.ReplicaRecreation {
	var out []copsev1alpha1.ReplicaRecreation
	for _, ask := range asks {
		for _, replica := range ask.replicas {
			rec := copsev1alpha1.ReplicaRecreation{
				ReplicaIndex: int32(replica),
				Reason:       ask.reason,
				Attempt:      obs.records.Attempt(replica) + 1,
				StartedAt:    metav1.NewTime(now),
				InPlace:      restartsInPlace(pcs, ask.reason),
			}
			for _, row := range rows {
				if !row.DeletedByRecreation(rec) {
					continue
				}
				for _, obj := range obs.children.Of(row.Kind, replica) {
					rec.Deleting = append(rec.Deleting, obj.GetUID())
				}
			}
			out = append(out, rec)
		}
	}
	return out
}
