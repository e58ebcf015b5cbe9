package podcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/topology"
)

// Reasons of the PodCliqueSet's MinAvailableBreached condition.
const (
	reasonReplicasBreached = "ReplicasBelowMinAvailable"
	reasonAllAvailable     = "AllReplicasAvailable"
	reasonNotYetAvailable  = "ReplicasNotYetAvailable"
)

// maxPodsNamed bounds how many pods a condition message names.
const maxPodsNamed = 5

// maxCliquesNamed bounds how many PodCliques a condition message names.
const maxCliquesNamed = 10

// statusInputs is everything status is computed from in one pass.
type statusInputs struct {
	observed       *observed
	replicas       []replicaAssessment
	progress       recreationProgress
	newRecreations []copsev1alpha1.ReplicaRecreation
	decision       passDecision
	// startTime is status.startTime as this pass sets it (nil before).
	startTime *time.Time
	now       time.Time
	// gangScheduling: the backend makes gangs; without it PodGangsScheduled
	// is absent. gangs are the current runs' gangs (gangFactsOf), and
	// incompleteGangTimeout the bound on a placement that lacks a clique.
	gangScheduling        bool
	gangs                 []gangFacts
	incompleteGangTimeout time.Duration
	// rollout is this pass's rollout step; rolloutReplicas what it was
	// decided on.
	rollout         rolloutDecision
	rolloutReplicas []rolloutReplica
	// admission is the Admitted condition of a queued PodCliqueSet
	// (observeAdmission).
	admission admission
}

// computeStatus derives the PodCliqueSet's whole status from one pass's
// observations and decisions. It is the only place status is computed;
// lastErrors alone is carried over, and set by noteFailures after acting.
func computeStatus(pcs *copsev1alpha1.PodCliqueSet, in statusInputs) copsev1alpha1.PodCliqueSetStatus {
	status := *pcs.Status.DeepCopy()
	status.Conditions = slices.Clone(status.Conditions)
	status.ObservedGeneration = ptr.To(pcs.Generation)
	status.Selector = ptr.To(labels.SelectPodCliqueSet(pcs.Name).String())
	status.ReplicaRecreations = mergeRecreations(pcs.Status.ReplicaRecreations, in.newRecreations, in.progress, in.now)

	status.Replicas = 0
	for r := range int(pcs.Spec.Replicas) {
		if made := in.observed.replicas[r]; len(made.podCliques) > 0 || len(made.scalingGroups) > 0 {
			status.Replicas++
		}
	}

	var available int32
	var breachedReplicas []int
	started := false
	for _, a := range in.replicas {
		if a.available {
			available++
		}
		if a.breached {
			breachedReplicas = append(breachedReplicas, a.index)
		}
		started = started || a.started || a.succeeded
	}
	status.AvailableReplicas = available
	if pcs.IsTraining() {
		status.SucceededReplicaIndexes = succeededReplicas(in.replicas).String()
		status.CreatedReplicaIndexes = createdReplicas(pcs, in.observed.records, in.replicas, recreatingReplicas(in.progress.inProgress, in.newRecreations)).String()
	}
	rolloutStatus(&status, pcs, in.observed, in.rollout, in.rolloutReplicas)
	setCondition(in.now, &status.Conditions, breachCondition(pcs, available, breachedReplicas))

	d := in.decision
	status.RestartCount = d.restartCount
	status.UncountedRestarts = d.uncountedRestarts
	status.RestartsCountTowardsMax = max(d.restartCount-d.uncountedRestarts, 0)
	status.FailureRuleMatches = countRuleMatches(status.FailureRuleMatches, d.verdicts)
	if d.failReason != "" {
		setCondition(in.now, &status.Conditions, metav1.Condition{
			Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: d.failReason,
			Message: withRootCause(d.failMessage, in.replicas, d.causeReplica), ObservedGeneration: pcs.Generation,
		})
	}
	if d.causeReplica >= 0 && d.causeReplica < len(in.replicas) {
		if f := in.replicas[d.causeReplica].firstFailure; f != nil {
			failure := lifecycle.DescribeFailure(*f)
			verdict := in.replicas[d.causeReplica].verdict
			failure.Rule, failure.Action = verdict.Rule, verdict.Action
			status.LastFailure = &failure
		}
	}

	failing := meta.IsStatusConditionTrue(status.Conditions, copsev1alpha1.ConditionTypeFailed)
	succeededAt, allDone := allSucceeded(in.replicas)
	inTime := allDone && (pcs.MaxRuntime() == nil || in.startTime == nil || !succeededAt.After(in.startTime.Add(*pcs.MaxRuntime())))
	policy := pcs.SuccessPolicy()
	if policy != nil && inTime && !failing && !pcs.Status.Phase.IsTerminal() &&
		!meta.IsStatusConditionTrue(status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) {
		// Written before any pod is terminated: act terminates from it.
		setCondition(in.now, &status.Conditions, successCriteriaMetCondition(pcs, policy, in.replicas, in.now))
	}
	activePods := len(in.observed.activePods)
	if cond := suspendedCondition(pcs, activePods, in.now); cond != nil {
		setCondition(in.now, &status.Conditions, *cond)
	}
	status.Phase = computePhase(phaseInputs{
		training:   pcs.IsTraining(),
		previous:   pcs.Status.Phase,
		failing:    failing,
		activePods: activePods,
		// With a success policy, success is SuccessCriteriaMet, and the
		// phase waits for the lingering pods to be gone.
		succeeded:          inTime && policy == nil,
		started:            started,
		suspended:          pcs.IsSuspended(),
		successCriteriaMet: meta.IsStatusConditionTrue(status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet),
	})
	if status.StartTime == nil && in.startTime != nil &&
		(status.Phase == copsev1alpha1.PodCliqueSetPhaseRunning || status.Phase.IsTerminal()) {
		// Set once, when the workload first runs; restarts never reset it.
		status.StartTime = &metav1.Time{Time: *in.startTime}
	}
	if status.CompletionTime == nil && status.Phase.IsTerminal() {
		status.CompletionTime = completionTime(status, succeededAt, in.now)
	}
	if pcs.IsSuspended() && activePods == 0 && !status.Phase.IsTerminal() {
		// The suspension removed every pod: the resumed workload starts
		// afresh, and time spent suspended never counts against maxRuntime.
		status.StartTime = nil
	}

	setOrRemoveCondition(in.now, &status.Conditions, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
		topologyCondition(pcs, in.observed.packingProblems, in.now))
	var gangs *metav1.Condition
	if in.gangScheduling && !pcs.IsSuspended() {
		gangs = gangsScheduledCondition(pcs, in.gangs, in.incompleteGangTimeout, in.now)
		if gangs == nil {
			// No current gang (none created yet, being recreated, or
			// scaled to zero): the last verdict stands. A suspended
			// workload has none to describe: its next run is placed anew.
			gangs = meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled)
		}
	}
	setOrRemoveCondition(in.now, &status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled, gangs)
	if in.admission.tracked {
		setOrRemoveCondition(in.now, &status.Conditions, copsev1alpha1.ConditionTypeAdmitted, in.admission.condition)
	}

	withStatus := pcs.DeepCopy()
	withStatus.Status = status
	if cond := overdueCondition(pcs, overduePods(awaitedPods(withStatus, lifecycle.RecordsOf(withStatus), in.observed), in.now)); cond != nil {
		setCondition(in.now, &status.Conditions, *cond)
	}
	return status
}

// completionTime is when a workload whose phase became terminal in this
// pass ended: a failure when it was decided (the Failed condition), a
// success by policy when SuccessCriteriaMet was recorded, any other success
// when its last replica succeeded (the pods' own finish times); now when
// none of these is known.
func completionTime(status copsev1alpha1.PodCliqueSetStatus, succeededAt, now time.Time) *metav1.Time {
	at := now
	switch {
	case status.Phase == copsev1alpha1.PodCliqueSetPhaseFailed:
		if c := meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil {
			at = c.LastTransitionTime.Time
		}
	case meta.IsStatusConditionTrue(status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet):
		at = meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet).LastTransitionTime.Time
	case !succeededAt.IsZero():
		at = succeededAt
	}
	if at.IsZero() || at.After(now) {
		at = now
	}
	return &metav1.Time{Time: at}
}

// setOrRemoveCondition sets cond, or removes the condition of type t when
// cond is nil.
func setOrRemoveCondition(now time.Time, conditions *[]metav1.Condition, t string, cond *metav1.Condition) {
	if cond == nil {
		meta.RemoveStatusCondition(conditions, t)
		return
	}
	setCondition(now, conditions, *cond)
}

// setCondition sets cond; a transition without a time of its own is dated
// by the pass (never the wall clock: the decision is pure).
func setCondition(now time.Time, conditions *[]metav1.Condition, cond metav1.Condition) {
	if cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = metav1.NewTime(now)
	}
	meta.SetStatusCondition(conditions, cond)
}

// successCriteriaMetCondition is SuccessCriteriaMet=True, naming the
// PodCliques that met the policy.
func successCriteriaMetCondition(pcs *copsev1alpha1.PodCliqueSet, policy *copsev1alpha1.SuccessPolicy,
	replicas []replicaAssessment, now time.Time) metav1.Condition {
	var by []string
	for _, a := range replicas {
		by = append(by, a.succeededBy...)
	}
	named := by[:min(len(by), maxCliquesNamed)]
	list := strings.Join(named, ", ")
	if more := len(by) - len(named); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return metav1.Condition{
		Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonSuccessPolicy,
		Message: fmt.Sprintf("every replica met the success policy (%s), by PodCliques %s; the pods still running are terminated",
			describeSuccessPolicy(policy), list),
		ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now),
	}
}

// overdueCondition is TerminationOverdue: True naming the stuck pods while
// some are, False once none is after having been True, nil (absent) while it
// never was.
func overdueCondition(pcs *copsev1alpha1.PodCliqueSet, overdue []podstate.Summary) *metav1.Condition {
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeTerminationOverdue, ObservedGeneration: pcs.Generation}
	if len(overdue) == 0 {
		if !meta.IsStatusConditionTrue(pcs.Status.Conditions, cond.Type) {
			return nil
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonNoPodOverdue
		cond.Message = "no pod the operator waits for is terminating past its grace period"
		return &cond
	}
	names := make([]string, 0, min(len(overdue), maxPodsNamed))
	for _, p := range overdue[:min(len(overdue), maxPodsNamed)] {
		node := p.Node
		if node == "" {
			node = "no node"
		}
		names = append(names, fmt.Sprintf("%s (on %s, grace period ended %s)", p.Name, node, p.DeletionDeadline.UTC().Format(time.RFC3339)))
	}
	if more := len(overdue) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonPodsStuckTerminating
	cond.Message = fmt.Sprintf("%d pod(s) are still terminating well past their grace period, "+
		"probably on an unreachable node: %s. copse never force-deletes a pod; "+
		"delete the node object once it is known to be down, or force-delete the pods", len(overdue), strings.Join(names, ", "))
	return &cond
}

// withRootCause adds the replica's first failed pod to a failure message.
// countRuleMatches adds this pass's verdicts of rules to the recorded
// counts (status.failureRuleMatches); the default verdict is no rule's.
func countRuleMatches(recorded []copsev1alpha1.FailureRuleMatch, verdicts []lifecycle.RuleVerdict) []copsev1alpha1.FailureRuleMatch {
	out := slices.Clone(recorded)
	for _, v := range verdicts {
		if v.Rule == "" {
			continue
		}
		i := slices.IndexFunc(out, func(m copsev1alpha1.FailureRuleMatch) bool { return m.Rule == v.Rule })
		if i < 0 {
			out = append(out, copsev1alpha1.FailureRuleMatch{Rule: v.Rule})
			i = len(out) - 1
		}
		out[i].Action = v.Action
		out[i].Count++
	}
	return out
}

func withRootCause(message string, replicas []replicaAssessment, replica int) string {
	return message + rootCause(replicas, replica)
}

func breachCondition(pcs *copsev1alpha1.PodCliqueSet, available int32, breachedReplicas []int) metav1.Condition {
	cond := metav1.Condition{Type: constants.ConditionTypeMinAvailableBreached, ObservedGeneration: pcs.Generation}
	switch {
	case len(breachedReplicas) > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, reasonReplicasBreached
		cond.Message = fmt.Sprintf("replicas %v are below minAvailable; each is recreated once breached for longer than terminationDelay (%s)",
			breachedReplicas, pcs.TerminationDelay())
	case available == pcs.Spec.Replicas:
		cond.Status, cond.Reason = metav1.ConditionFalse, reasonAllAvailable
		cond.Message = fmt.Sprintf("all %d replicas are available", available)
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, reasonNotYetAvailable
		cond.Message = fmt.Sprintf("%d of %d replicas are available; the others have not been available yet", available, pcs.Spec.Replicas)
	}
	return cond
}

// mergeRecreations returns the recreation list after this pass: finished
// entries get their completion time, restarts in place whose barrier lifted
// the time of that, new entries replace the replica's previous one.
func mergeRecreations(previous, added []copsev1alpha1.ReplicaRecreation, progress recreationProgress, now time.Time) []copsev1alpha1.ReplicaRecreation {
	byReplica := map[int32]copsev1alpha1.ReplicaRecreation{}
	var order []int32
	for _, rec := range previous {
		rec = *rec.DeepCopy()
		if rec.CompletedAt == nil && progress.finished[int(rec.ReplicaIndex)] {
			completed := metav1.NewTime(now)
			rec.CompletedAt = &completed
			rec.Deleting = nil
		}
		if rec.CompletedAt != nil && rec.BarrierLiftedAt == nil && progress.barrierLifted[int(rec.ReplicaIndex)] {
			lifted := metav1.NewTime(now)
			rec.BarrierLiftedAt = &lifted
		}
		if _, seen := byReplica[rec.ReplicaIndex]; !seen {
			order = append(order, rec.ReplicaIndex)
		}
		byReplica[rec.ReplicaIndex] = rec
	}
	for _, rec := range added {
		if _, seen := byReplica[rec.ReplicaIndex]; !seen {
			order = append(order, rec.ReplicaIndex)
		}
		byReplica[rec.ReplicaIndex] = rec
	}
	out := make([]copsev1alpha1.ReplicaRecreation, 0, len(order))
	for _, idx := range order {
		out = append(out, byReplica[idx])
	}
	return out
}

// createdReplicas is status.createdReplicaIndexes after this pass: the
// recorded replicas, less those a recreation is under way for (their new
// run is not whole yet), plus those whose current run is whole now.
func createdReplicas(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, replicas []replicaAssessment, recreating map[int]bool) indexset.Set {
	out := indexset.Set{}
	maps.Copy(out, rec.Created)
	for _, a := range replicas {
		switch {
		case recreating[a.index]:
			delete(out, a.index)
		case a.complete:
			out.Add(a.index)
		}
	}
	for r := range out {
		if recreating[r] || r >= int(pcs.Spec.Replicas) {
			delete(out, r)
		}
	}
	return out
}

// lingeringPods are the pods a suspension ends without recreating their
// replica: the pods still running of replicas that succeeded (met the
// success policy while others had not yet). Their replica keeps its result
// and gets no new pods (lifecycle.MayCreatePods), so the suspension is
// complete, startTime clears and a queue gets its quota back once they
// are gone too.
func lingeringPods(rec lifecycle.Records, active []podstate.Summary) []podstate.Summary {
	if !rec.Suspended || rec.Ended {
		return nil
	}
	var out []podstate.Summary
	for _, p := range active {
		if rec.Succeeded.Has(p.Replica) {
			out = append(out, p)
		}
	}
	return out
}

// suspendedCondition is the Suspended condition after this pass: True
// while spec.suspend is, saying how many pods are still going away; False
// (Resumed) once spec.suspend is false after having been true; nil while
// the workload was never suspended.
func suspendedCondition(pcs *copsev1alpha1.PodCliqueSet, activePods int, now time.Time) *metav1.Condition {
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeSuspended, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case pcs.IsSuspended():
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonSuspended
		cond.Message = "spec.suspend is true: no pod is left, and none is created until it is false"
		if activePods > 0 {
			cond.Message = fmt.Sprintf("spec.suspend is true: %d pod(s) are still going away; none is created until it is false", activePods)
		}
	case meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuspended) != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonResumed
		cond.Message = "spec.suspend is false: resumed, each replica that had not succeeded runs afresh"
	default:
		return nil
	}
	return &cond
}

// gangsScheduledCondition is PodGangsScheduled, from the gangs of the
// replicas' current runs: False (Unschedulable) naming each gang the
// scheduler cannot place, with its message; False (GangPlacedIncomplete)
// naming each gang placed with a clique below its minAvailable, and when
// its pods are recreated (after timeout); True once every gang was placed
// whole; Unknown while some wait for a verdict, or for their base gang to be
// placed first (a scaled gang held in its domain, whose pods no node can
// take until then). Nil when there is no gang.
func gangsScheduledCondition(pcs *copsev1alpha1.PodCliqueSet, gangs []gangFacts, timeout time.Duration, now time.Time) *metav1.Condition {
	if len(gangs) == 0 {
		return nil
	}
	placedGang := map[string]bool{}
	for _, g := range gangs {
		placedGang[g.name] = g.isPlaced()
	}
	var placed int
	var unplaced, incomplete, pending []string
	for _, g := range gangs {
		switch {
		case g.incomplete():
			incomplete = append(incomplete, fmt.Sprintf("%s, placed without enough pods of %s; its pods are recreated at %s unless they are placed by then",
				g.name, nameSome(g.short, ", "), g.placedAt.Add(timeout).UTC().Format(time.RFC3339)))
		case g.isPlaced():
			placed++
		case g.after != "" && !placedGang[g.after]:
			pending = append(pending, fmt.Sprintf("%s (after its base gang %s, in whose domain it is held)", g.name, g.after))
		case g.verdict != nil && g.verdict.Status == metav1.ConditionFalse:
			unplaced = append(unplaced, fmt.Sprintf("%s (%s: %s)", g.name, g.verdict.Reason, trimMessage(g.verdict.Message)))
		case g.unschedulable != "":
			unplaced = append(unplaced, fmt.Sprintf("%s (Unschedulable: %s)", g.name, trimMessage(g.unschedulable)))
		default:
			pending = append(pending, g.name)
		}
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypePodGangsScheduled, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case len(unplaced) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonGangUnschedulable
		cond.Message = fmt.Sprintf("the scheduler cannot place %d of %d gangs: %s", len(unplaced), len(gangs), nameSome(unplaced, "; "))
		if len(incomplete) > 0 {
			cond.Message += fmt.Sprintf("; %d placed incomplete: %s", len(incomplete), nameSome(incomplete, "; "))
		}
	case len(incomplete) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonGangPlacedIncomplete
		cond.Message = fmt.Sprintf("%d of %d gangs hold nodes without a whole placement: %s", len(incomplete), len(gangs), nameSome(incomplete, "; "))
	case len(pending) > 0:
		cond.Status, cond.Reason = metav1.ConditionUnknown, copsev1alpha1.ReasonGangsPending
		cond.Message = fmt.Sprintf("%d of %d gangs placed; waiting for the scheduler to place %s", placed, len(gangs), nameSome(pending, ", "))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled
		cond.Message = fmt.Sprintf("all %d gangs were placed", len(gangs))
	}
	return &cond
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

// maxSchedulerMessage bounds how much of the scheduler's message about one
// gang the condition quotes.
const maxSchedulerMessage = 300

// maxGangsNamed bounds how many gangs a condition message names.
const maxGangsNamed = 5

// topologyCondition is TopologyLevelsUnavailable, with Grove's statuses:
// with a problem, the first problem's reason, every problem in the message,
// and the status that reason has in Grove (topologyProblemStatus); False
// when every constraint is applied; nil (absent) for a PodCliqueSet without
// any constraint.
func topologyCondition(pcs *copsev1alpha1.PodCliqueSet, problems []topology.Problem, now time.Time) *metav1.Condition {
	if !topology.Constrained(pcs) {
		return nil
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeTopologyLevelsUnavailable, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(problems) == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable
		cond.Message = fmt.Sprintf("every topologyConstraint is applied with ClusterTopologyBinding %s", topology.TopologyName(pcs))
		return &cond
	}
	cond.Status, cond.Reason = topologyProblemStatus(problems[0].Reason), problems[0].Reason
	cond.Message = topology.Summary(problems) + "; these constraints are left off the gangs and pods created from now on"
	return &cond
}

// topologyProblemStatus is the TopologyLevelsUnavailable status of a
// problem's reason, as Grove sets it: True when a level the constraints name
// is missing from the binding (the levels are known to be unavailable);
// Unknown when copse cannot tell, because the binding is not there (deleted,
// or never created), no constraint names one, or topology-aware scheduling
// is off.
func topologyProblemStatus(reason string) metav1.ConditionStatus {
	if reason == copsev1alpha1.ReasonClusterTopologyLevelsUnavailable {
		return metav1.ConditionTrue
	}
	return metav1.ConditionUnknown
}

// nameSome joins up to maxGangsNamed items, sorted, and counts the rest.
func nameSome(items []string, sep string) string {
	sort.Strings(items)
	named := items[:min(len(items), maxGangsNamed)]
	out := strings.Join(named, sep)
	if more := len(items) - len(named); more > 0 {
		out += fmt.Sprintf("%s%d more", sep, more)
	}
	return out
}

func trimMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if len(msg) <= maxSchedulerMessage {
		return msg
	}
	return msg[:maxSchedulerMessage] + "..."
}

// overdueGrace is how long past its grace period a terminating pod may take
// before the PodCliqueSet reports it as stuck: a kubelet normally finishes
// well within it; an unreachable node never does.
const overdueGrace = 30 * time.Second

// awaitedPods are the pods the controller waits to be gone: the previous
// runs of replicas being recreated, every pod still running of an ended
// workload, and the lingering pods a suspension ends.
func awaitedPods(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed) []podstate.Summary {
	var out []podstate.Summary
	if rec.Ended {
		out = append(out, obs.activePods...)
	}
	out = append(out, lingeringPods(rec, obs.activePods)...)
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.CompletedAt == nil {
			out = append(out, oldRunPods(obs.replicas[int(rec.ReplicaIndex)].pods, int(rec.ReplicaIndex), rec.Attempt)...)
		}
	}
	return out
}

// overduePods are the awaited pods still terminating overdueGrace after
// their grace period ended.
func overduePods(awaited []podstate.Summary, now time.Time) []podstate.Summary {
	var out []podstate.Summary
	for _, p := range awaited {
		if p.Terminating && !now.Before(p.DeletionDeadline.Add(overdueGrace)) {
			out = append(out, p)
		}
	}
	return out
}

// overdueCheckAt is when the next awaited, terminating pod becomes overdue;
// zero when none will.
func overdueCheckAt(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed) time.Time {
	var next time.Time
	for _, p := range awaitedPods(pcs, rec, obs) {
		if !p.Terminating {
			continue
		}
		at := p.DeletionDeadline.Add(overdueGrace)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// rolloutStatus writes the rollout's part of status as Grove reports it:
// currentGenerationHash, updatedReplicas (replicas with every PodClique on
// its template, no old pod running and every gang available) and
// updateProgress with the counts of PodCliques and PodCliqueScalingGroups
// that report the generation hash in their own status.
func rolloutStatus(status *copsev1alpha1.PodCliqueSetStatus, pcs *copsev1alpha1.PodCliqueSet, obs *observed,
	d rolloutDecision, replicas []rolloutReplica) {
	status.CurrentGenerationHash = &d.hash
	status.UpdatedReplicas = 0
	for _, r := range replicas {
		if replicaUpdated(r) {
			status.UpdatedReplicas++
		}
	}
	status.UpdateProgress = d.progress
	if p := status.UpdateProgress; p != nil {
		p.UpdatedPodCliquesCount, p.TotalPodCliquesCount, p.UpdatedPodCliqueScalingGroupsCount, p.TotalPodCliqueScalingGroupsCount =
			updateCounts(pcs, obs, d.hash)
	}
}

// updateCounts counts the standalone PodCliques and the
// PodCliqueScalingGroups whose status says they realise generation hash
// (Grove's currentPodCliqueSetGenerationHash), of those the spec expects.
func updateCounts(pcs *copsev1alpha1.PodCliqueSet, obs *observed, hash string) (cliques, totalCliques, groups, totalGroups int32) {
	totalCliques = int32(len(pcs.StandaloneCliques())) * pcs.Spec.Replicas
	totalGroups = int32(len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)) * pcs.Spec.Replicas
	for r := range int(pcs.Spec.Replicas) {
		for _, pclq := range obs.replicas[r].podCliques {
			if pclq.Labels[labels.ScalingGroupKey] == "" && pclq.DeletionTimestamp == nil &&
				equalHash(pclq.Status.CurrentPodCliqueSetGenerationHash, hash) {
				cliques++
			}
		}
		for _, g := range obs.replicas[r].scalingGroups {
			if g.DeletionTimestamp == nil && equalHash(g.Status.CurrentPodCliqueSetGenerationHash, hash) {
				groups++
			}
		}
	}
	return min(cliques, totalCliques), totalCliques, min(groups, totalGroups), totalGroups
}

func equalHash(have *string, want string) bool { return have != nil && *have == want }
