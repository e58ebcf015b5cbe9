package kueue

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// admittedCondition is the PodCliqueSet's Admitted condition as its
// Workload wl says (docs/kueue.md): True while Kueue admits it; False
// Evicted while an eviction holds its quota, FailedToStart once its
// admission could not be applied, Pending while it waits (quoting Kueue's
// QuotaReserved message, or the admission checks it waits for). A finished
// Workload, or none, leaves the condition as it is.
func admittedCondition(pcs *copsev1alpha1.PodCliqueSet, wl *kueue.Workload, now time.Time) metav1.Condition {
	current := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
	if wl == nil || (IsFinished(wl) && !finishedToStart(wl)) {
		if current != nil {
			return *current
		}
		return pending(pcs, fmt.Sprintf("waiting for Workload %s to be created", WorkloadName(pcs.Name)), now)
	}
	if finishedToStart(wl) {
		return failedToStart(pcs, meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished).Message, now)
	}
	if eviction := Eviction(wl); eviction != nil && HasQuotaReservation(wl) {
		return condition(pcs, metav1.ConditionFalse, copsev1alpha1.ReasonEvicted,
			fmt.Sprintf("Kueue evicted Workload %s (%s): %s; the PodCliqueSet is suspended and queues again once its pods are gone",
				wl.Name, eviction.Reason, eviction.Message), now)
	}
	if IsAdmitted(wl) {
		return condition(pcs, metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted,
			fmt.Sprintf("Workload %s is admitted by ClusterQueue %s", wl.Name, clusterQueue(wl)), now)
	}
	if HasQuotaReservation(wl) {
		return pending(pcs, fmt.Sprintf("Workload %s has quota reserved in ClusterQueue %s and waits for its admission checks: %s",
			wl.Name, clusterQueue(wl), pendingChecks(wl)), now)
	}
	message := fmt.Sprintf("Workload %s waits in LocalQueue %s for Kueue to admit it", wl.Name, wl.Spec.QueueName)
	if reserved := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); reserved != nil && reserved.Message != "" {
		message = fmt.Sprintf("Workload %s waits in LocalQueue %s: %s", wl.Name, wl.Spec.QueueName, reserved.Message)
	}
	return pending(pcs, message, now)
}

func finishedToStart(wl *kueue.Workload) bool {
	cond := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished)
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == ReasonFailedToStart
}

func pending(pcs *copsev1alpha1.PodCliqueSet, message string, now time.Time) metav1.Condition {
	return condition(pcs, metav1.ConditionFalse, copsev1alpha1.ReasonPending, message, now)
}

func refused(pcs *copsev1alpha1.PodCliqueSet, message string, now time.Time) metav1.Condition {
	return condition(pcs, metav1.ConditionFalse, copsev1alpha1.ReasonWorkloadRefused, message, now)
}

func failedToStart(pcs *copsev1alpha1.PodCliqueSet, message string, now time.Time) metav1.Condition {
	return condition(pcs, metav1.ConditionFalse, copsev1alpha1.ReasonFailedToStart, message, now)
}

// Refused is the Admitted condition of a PodCliqueSet whose Workload the API
// server refused (Kueue's webhook, a quota on Workloads): the message
// quotes the refusal.
func Refused(pcs *copsev1alpha1.PodCliqueSet, err error, now time.Time) metav1.Condition {
	return refused(pcs, fmt.Sprintf("the API server refused Workload %s: %v", WorkloadName(pcs.Name), err), now)
}

func condition(pcs *copsev1alpha1.PodCliqueSet, status metav1.ConditionStatus, reason, message string, now time.Time) metav1.Condition {
	return metav1.Condition{
		Type: copsev1alpha1.ConditionTypeAdmitted, Status: status, Reason: reason, Message: truncate(message),
		ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now),
	}
}
