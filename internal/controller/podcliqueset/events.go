package podcliqueset

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// Event reasons (GREP-0285's, plus Grove-style gang termination and stuck
// terminations).
const (
	EventGangTermination   = "GangTermination"
	EventPodCliqueFailed   = "PodCliqueFailed"
	EventReplicaRestarting = "ReplicaRestarting"
	// EventRestartBarrierLifted: a restart in place reached the point where
	// every pod of the replica is in the new attempt.
	EventRestartBarrierLifted = "RestartBarrierLifted"
	EventMaxRestartsExceeded  = "MaxRestartsExceeded"
	EventMaxRuntimeExceeded   = "MaxRuntimeExceeded"
	EventWorkloadSucceeded    = "WorkloadSucceeded"
	EventTerminationOverdue   = "TerminationOverdue"
	EventSuccessCriteriaMet   = "SuccessCriteriaMet"
	EventSuspended            = "Suspended"
	EventResumed              = "Resumed"
	EventGangPlacedIncomplete = "GangPlacedIncomplete"
	// EventFailedByRule: a failurePolicy rule with action FailWorkload
	// matched; EventMaxUncountedRestartsExceeded: uncounted restarts ran out.
	EventFailedByRule                 = "FailedByRule"
	EventMaxUncountedRestartsExceeded = "MaxUncountedRestartsExceeded"
	EventInPlaceRestartTimedOut       = "InPlaceRestartTimedOut"
)

// transitionEvent is one event to record, decided from a status transition
// (type, reason, action, message).
type transitionEvent = children.Event

// newEvent is a transitionEvent of type, reason, action and message.
func newEvent(eventType, reason, action, message string) transitionEvent {
	return transitionEvent{Type: eventType, Reason: reason, Action: action, Message: message}
}

// transitionEvents are the events for the transitions from previous to
// current (the status as written). Pure, so that each event's trigger and
// text are table-tested; it runs only after the write succeeded, so a pass
// that lost a conflict reports nothing it did not do.
func transitionEvents(pcs *copsev1alpha1.PodCliqueSet, previous, current *copsev1alpha1.PodCliqueSetStatus,
	replicas []replicaAssessment, newRecreations []copsev1alpha1.ReplicaRecreation) []transitionEvent {
	var out []transitionEvent
	for _, rec := range newRecreations {
		replica := int(rec.ReplicaIndex)
		if rec.Reason == copsev1alpha1.RecreationReasonSuspension {
			// The Suspended event below says it; nothing failed.
			continue
		}
		if rec.Reason == copsev1alpha1.RecreationReasonIncompletePlacement {
			out = append(out, newEvent(corev1.EventTypeWarning, EventGangPlacedIncomplete, "Recreate", fmt.Sprintf(
				"replica %d held its nodes for longer than scheduler.incompleteGangTimeout with a gang placed incomplete; "+
					"recreating its pods as attempt %d to free the nodes and place the gang again (no restart is counted): %s",
				replica, rec.Attempt, gangsMessage(current))))
			continue
		}
		if rec.Reason == copsev1alpha1.RecreationReasonInPlaceRestartTimeout {
			out = append(out, newEvent(corev1.EventTypeWarning, EventInPlaceRestartTimedOut, "Recreate", fmt.Sprintf(
				"replica %d's restart in place held its startup gates for longer than scheduler.inPlaceRestartTimeout "+
					"(a kept pod's containers were not restarted); recreating its pods as attempt %d (no restart is counted)",
				replica, rec.Attempt)))
			continue
		}
		if !pcs.IsTraining() {
			out = append(out, newEvent(corev1.EventTypeWarning, EventGangTermination, "Recreate", fmt.Sprintf(
				"replica %d stayed below minAvailable for longer than terminationDelay (%s); recreating it: %s",
				replica, pcs.TerminationDelay(), describeBreach(replicas, replica))))
			continue
		}
		budget := fmt.Sprintf("restart %d of %d allowed", current.RestartsCountTowardsMax, pcs.MaxRestarts())
		if rec.Reason == copsev1alpha1.RecreationReasonUncountedRestart {
			budget = fmt.Sprintf("uncounted restart %d of %d allowed, maxRestarts not spent", current.UncountedRestarts, pcs.MaxUncountedRestarts())
		}
		how := ""
		if rec.InPlace {
			how = " in place (its running pods keep their nodes and restart their containers; ended pods are made again)"
		}
		out = append(out, podCliqueFailed(replicas, replica),
			newEvent(corev1.EventTypeNormal, EventReplicaRestarting, "Restart", fmt.Sprintf(
				"restarting replica %d as attempt %d%s; %s%s%s",
				replica, rec.Attempt, how, budget, verdictNote(replicas, replica), rootCause(replicas, replica))))
	}
	liftedBefore := map[int32]bool{}
	for _, rec := range previous.ReplicaRecreations {
		liftedBefore[rec.ReplicaIndex] = rec.BarrierLiftedAt != nil
	}
	for _, rec := range current.ReplicaRecreations {
		if rec.BarrierLiftedAt != nil && !liftedBefore[rec.ReplicaIndex] {
			out = append(out, newEvent(corev1.EventTypeNormal, EventRestartBarrierLifted, "Restart", fmt.Sprintf(
				"replica %d: no pod runs an attempt before %d any more; the startup gates of attempt %d open",
				rec.ReplicaIndex, rec.Attempt, rec.Attempt)))
		}
	}

	was := meta.FindStatusCondition(previous.Conditions, copsev1alpha1.ConditionTypeFailed)
	now := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeFailed)
	if now != nil && now.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue) {
		switch now.Reason {
		case copsev1alpha1.ReasonMaxRestartsExceeded:
			for _, a := range replicas {
				if a.breached {
					out = append(out, podCliqueFailed(replicas, a.index))
				}
			}
			out = append(out, newEvent(corev1.EventTypeWarning, EventMaxRestartsExceeded, "Fail", now.Message+"; terminating all pods"))
		case copsev1alpha1.ReasonMaxRuntimeExceeded:
			out = append(out, newEvent(corev1.EventTypeWarning, EventMaxRuntimeExceeded, "Fail", now.Message+"; terminating all pods"))
		case copsev1alpha1.ReasonFailedByRule:
			out = append(out, newEvent(corev1.EventTypeWarning, EventFailedByRule, "Fail", now.Message+"; terminating all pods"))
		case copsev1alpha1.ReasonMaxUncountedRestartsExceeded:
			out = append(out, newEvent(corev1.EventTypeWarning, EventMaxUncountedRestartsExceeded, "Fail", now.Message+"; terminating all pods"))
		}
	}
	if met := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet); met != nil &&
		met.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(previous.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) {
		out = append(out, newEvent(corev1.EventTypeNormal, EventSuccessCriteriaMet, "Complete", met.Message))
	}
	if current.Phase == copsev1alpha1.PodCliqueSetPhaseSucceeded && previous.Phase != copsev1alpha1.PodCliqueSetPhaseSucceeded {
		how := fmt.Sprintf("all %d replicas completed successfully", pcs.Spec.Replicas)
		if meta.IsStatusConditionTrue(current.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) {
			how = fmt.Sprintf("all %d replicas met the success policy and no pod is left running", pcs.Spec.Replicas)
		}
		out = append(out, newEvent(corev1.EventTypeNormal, EventWorkloadSucceeded, "Complete", fmt.Sprintf("%s after %d restarts", how, current.RestartCount)))
	}
	if was, now := meta.FindStatusCondition(previous.Conditions, copsev1alpha1.ConditionTypeSuspended),
		meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeSuspended); now != nil && (was == nil || was.Status != now.Status) {
		switch now.Status {
		case metav1.ConditionTrue:
			out = append(out, newEvent(corev1.EventTypeNormal, EventSuspended, "Suspend", fmt.Sprintf(
				"spec.suspend is true: deleting the pods of every replica that has not succeeded; restartCount %d is kept", current.RestartCount)))
		case metav1.ConditionFalse:
			out = append(out, newEvent(corev1.EventTypeNormal, EventResumed, "Resume",
				"spec.suspend is false: every replica that had not succeeded runs afresh"))
		}
	}
	if overdue := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue); overdue != nil &&
		overdue.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(previous.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue) {
		out = append(out, newEvent(corev1.EventTypeWarning, EventTerminationOverdue, "Terminate", overdue.Message))
	}
	return out
}

func podCliqueFailed(replicas []replicaAssessment, replica int) transitionEvent {
	return newEvent(corev1.EventTypeWarning, EventPodCliqueFailed, "Observe",
		fmt.Sprintf("replica %d: %s%s", replica, describeBreach(replicas, replica), rootCause(replicas, replica)))
}

func describeBreach(replicas []replicaAssessment, replica int) string {
	for _, a := range replicas {
		if a.index == replica && a.breached {
			return fmt.Sprintf("breached since %s: %s", a.breachedSince.UTC().Format(time.RFC3339), strings.Join(a.breachedBy, ", "))
		}
	}
	return "no longer observed"
}

// verdictNote is " (failurePolicy rule <name>: <action>)" for a replica
// whose root cause a rule matched, else "".
func verdictNote(replicas []replicaAssessment, replica int) string {
	for _, a := range replicas {
		if a.index == replica && a.verdict.Rule != "" {
			return fmt.Sprintf(" (failurePolicy rule %q: %s)", a.verdict.Rule, a.verdict.Action)
		}
	}
	return ""
}

// rootCause is "; first failure: <pod summary>" for a replica whose pod
// failed, else "".
func rootCause(replicas []replicaAssessment, replica int) string {
	for _, a := range replicas {
		if a.index == replica && a.firstFailure != nil {
			return "; first failure: " + lifecycle.DescribeFailure(*a.firstFailure).Summary
		}
	}
	return ""
}

// gangsMessage is the PodGangsScheduled condition's message, which names
// the gangs and cliques, or "" without it.
func gangsMessage(status *copsev1alpha1.PodCliqueSetStatus) string {
	if c := meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled); c != nil {
		return c.Message
	}
	return ""
}

// Events of a rolling update, on the PodCliqueSet.
const (
	EventRollingUpdateStarted   = "RollingUpdateStarted"
	EventReplicaUpdateStarted   = "ReplicaUpdateStarted"
	EventReplicaUpdated         = "ReplicaUpdated"
	EventRollingUpdateCompleted = "RollingUpdateCompleted"
)

// rolloutEvents are the events of a rollout step that the status write
// made durable.
func rolloutEvents(pcs *copsev1alpha1.PodCliqueSet, d rolloutDecision) []transitionEvent {
	var out []transitionEvent
	if d.started {
		strategy := "RollingRecreate: one replica at a time, whole gangs"
		if pcs.UpdatesOnDelete() {
			strategy = "OnDelete: the PodCliques follow the template, and a pod someone deletes comes back with it"
		}
		out = append(out, newEvent(corev1.EventTypeNormal, EventRollingUpdateStarted, "Update",
			fmt.Sprintf("generation hash %s: updating %d replicas (%s)", d.hash, pcs.Spec.Replicas, strategy)))
	}
	if d.replicaUpdated >= 0 {
		out = append(out, newEvent(corev1.EventTypeNormal, EventReplicaUpdated, "Update",
			fmt.Sprintf("replica %d runs generation hash %s and is available", d.replicaUpdated, d.hash)))
	}
	if d.replicaStarted >= 0 {
		out = append(out, newEvent(corev1.EventTypeNormal, EventReplicaUpdateStarted, "Update",
			fmt.Sprintf("updating replica %d to generation hash %s: its base gang first, then each scaling-group gang", d.replicaStarted, d.hash)))
	}
	if d.completed {
		out = append(out, newEvent(corev1.EventTypeNormal, EventRollingUpdateCompleted, "Update",
			fmt.Sprintf("every replica runs generation hash %s", d.hash)))
	}
	return out
}
