package kueue

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The states of a Workload, read from its conditions as Kueue reads them.

// HasQuotaReservation: QuotaReserved is True, the Workload holds quota in a
// ClusterQueue (its admission checks may still be pending).
func HasQuotaReservation(wl *kueue.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
}

// IsAdmitted: Admitted is True, quota is reserved and every admission check
// is ready.
func IsAdmitted(wl *kueue.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
}

// IsFinished: Finished is True; Kueue released the Workload's quota.
func IsFinished(wl *kueue.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}

// Eviction is the Workload's Evicted condition while it is True, nil
// otherwise.
func Eviction(wl *kueue.Workload) *metav1.Condition {
	cond := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return nil
	}
	return cond
}

// ReasonFailedToStart finishes a Workload whose admission cannot be applied
// to the PodCliqueSet (ErrConflict), as Kueue finishes a job's.
const ReasonFailedToStart = "FailedToStart"

// conditionMessageLimit is the longest message a condition may hold.
const conditionMessageLimit = 32768

func truncate(message string) string {
	if len(message) <= conditionMessageLimit {
		return message
	}
	const ellipsis = "..."
	return message[:conditionMessageLimit-len(ellipsis)] + ellipsis
}

// ClearReservation is wl with its quota reservation given back after an
// eviction, once the PodCliqueSet's pods are gone: Requeued (True when the
// eviction was a preemption or a node failure, which Kueue requeues at
// once; False otherwise) with the eviction's reason and message,
// QuotaReserved False (Pending, the eviction's message), no admission, and
// Admitted made to agree (False, NoReservation), the time it was admitted
// added to accumulatedPastExecutionTimeSeconds as Kueue does.
func ClearReservation(wl *kueue.Workload, eviction metav1.Condition, now time.Time) *kueue.Workload {
	out := wl.DeepCopy()
	requeued := metav1.ConditionFalse
	if eviction.Reason == kueue.WorkloadEvictedByPreemption || eviction.Reason == kueue.WorkloadEvictedDueToNodeFailures {
		requeued = metav1.ConditionTrue
	}
	setCondition(out, kueue.WorkloadRequeued, requeued, eviction.Reason, eviction.Message, now)
	setCondition(out, kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", eviction.Message, now)
	out.Status.Admission = nil
	if admitted := meta.FindStatusCondition(out.Status.Conditions, kueue.WorkloadAdmitted); admitted != nil && admitted.Status == metav1.ConditionTrue {
		ran := int32(now.Sub(admitted.LastTransitionTime.Time).Seconds())
		if past := out.Status.AccumulatedPastExecutionTimeSeconds; past != nil {
			ran += *past
		}
		out.Status.AccumulatedPastExecutionTimeSeconds = &ran
	}
	setCondition(out, kueue.WorkloadAdmitted, metav1.ConditionFalse, "NoReservation", "The workload has no reservation", now)
	return out
}

// Finish is wl with Finished True for reason and message: Kueue releases
// its quota.
func Finish(wl *kueue.Workload, reason, message string, now time.Time) *kueue.Workload {
	out := wl.DeepCopy()
	setCondition(out, kueue.WorkloadFinished, metav1.ConditionTrue, reason, message, now)
	return out
}

// WithPodsReady is wl with cond as its PodsReady condition.
func WithPodsReady(wl *kueue.Workload, cond metav1.Condition) *kueue.Workload {
	out := wl.DeepCopy()
	cond.ObservedGeneration = wl.Generation
	meta.SetStatusCondition(&out.Status.Conditions, cond)
	return out
}

func setCondition(wl *kueue.Workload, conditionType string, status metav1.ConditionStatus, reason, message string, now time.Time) {
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: truncate(message),
		ObservedGeneration: wl.Generation, LastTransitionTime: metav1.NewTime(now),
	})
}

// Messages of the PodsReady condition.
const (
	podsNotReadyMessage   = "Not all pods are ready or succeeded"
	podsRecoveringMessage = "At least one pod has failed, waiting for recovery"
	podsReadyMessage      = "All pods reached readiness and the workload is running"
)

// PodsReadyCondition is the Workload's PodsReady condition, which Kueue's
// waitForPodsReady reads: True (Started; Recovered after a recovery) while
// the Workload is admitted and ready, every replica of the PodCliqueSet
// available; otherwise False, WaitForRecovery once it had been True,
// WaitForStart before.
func PodsReadyCondition(wl *kueue.Workload, ready bool, now time.Time) metav1.Condition {
	previous := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadPodsReady)
	cond := metav1.Condition{Type: kueue.WorkloadPodsReady, LastTransitionTime: metav1.NewTime(now)}
	recovering := previous != nil && (previous.Status == metav1.ConditionTrue || previous.Reason == kueue.WorkloadWaitForRecovery)
	switch {
	case !IsAdmitted(wl):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, kueue.WorkloadWaitForStart, podsNotReadyMessage
	case ready:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, kueue.WorkloadStarted, podsReadyMessage
		if previous != nil && (previous.Reason == kueue.WorkloadWaitForRecovery || previous.Reason == kueue.WorkloadRecovered) {
			cond.Reason = kueue.WorkloadRecovered
		}
	case recovering:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, kueue.WorkloadWaitForRecovery, podsRecoveringMessage
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, kueue.WorkloadWaitForStart, podsNotReadyMessage
	}
	return cond
}

// pendingChecks lists the admission checks not ready yet, with their
// messages.
func pendingChecks(wl *kueue.Workload) string {
	var out []string
	for _, check := range wl.Status.AdmissionChecks {
		if check.State == kueue.CheckStateReady {
			continue
		}
		entry := fmt.Sprintf("%s (%s)", check.Name, check.State)
		if check.Message != "" {
			entry += ": " + check.Message
		}
		out = append(out, entry)
	}
	return strings.Join(out, "; ")
}
