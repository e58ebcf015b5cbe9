package podcliqueset

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
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
		if made := in.observed.replica(r); len(made.podCliques) > 0 || len(made.scalingGroups) > 0 {
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
	activePods := len(in.observed.activePods())
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
