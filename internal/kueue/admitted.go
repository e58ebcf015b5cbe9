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

// refusedByAPIServer is the Admitted condition of a PodCliqueSet whose
// Workload the API server refused (Kueue's webhook, a quota on Workloads):
// the message quotes the refusal.
func refusedByAPIServer(pcs *copsev1alpha1.PodCliqueSet, refusal string, now time.Time) metav1.Condition {
	return refused(pcs, RefusedMessage(pcs.Name, refusal), now)
}

// RefusedMessage says that the API server refused the Workload of the
// PodCliqueSet pcsName, quoting refusal: the Admitted condition's message
// and the WorkloadRefused event's.
func RefusedMessage(pcsName, refusal string) string {
	return truncate(fmt.Sprintf("the API server refused Workload %s: %s", WorkloadName(pcsName), refusal))
}

// AdmittedCondition is the Admitted condition a queued PodCliqueSet carries:
// the one Decide's step leads to, from the same inputs. nil means the
// PodCliqueSet has none (it left its queue and its Workload is gone). The
// PodCliqueSet controller writes it (the one writer of PodCliqueSet status);
// the kueueworkload controller takes the step.
func AdmittedCondition(in Inputs) *metav1.Condition {
	d := Decide(in)
	if d.RemoveAdmitted || in.PodCliqueSet == nil {
		return nil
	}
	return &d.Admitted
}

// Tracked reports whether a PodCliqueSet takes part in Kueue's protocol:
// it carries the queue label, or still the Admitted condition (it left its
// queue, and its Workload is not gone yet).
func Tracked(pcs *copsev1alpha1.PodCliqueSet) bool {
	return QueueName(pcs) != "" || meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted) != nil
}

// PodsRemain: pods of the PodCliqueSet's run are left (activePods, those that
// hold their node), or its status.startTime is still set: the PodCliqueSet
// controller clears it once a suspension has removed every pod, and until
// then the templates may not change.
func PodsRemain(pcs *copsev1alpha1.PodCliqueSet, activePods int) bool {
	return pcs.Status.StartTime != nil || activePods > 0
}

func condition(pcs *copsev1alpha1.PodCliqueSet, status metav1.ConditionStatus, reason, message string, now time.Time) metav1.Condition {
	return metav1.Condition{
		Type: copsev1alpha1.ConditionTypeAdmitted, Status: status, Reason: reason, Message: truncate(message),
		ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now),
	}
}
