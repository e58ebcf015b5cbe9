package podclique

import (
	"fmt"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionReasonNeverAvailable is the reason of MinAvailableBreached=Unknown:
// the clique has never had minAvailable pods scheduled and ready, so there is
// nothing to breach yet. A clique that is still starting must not look like
// one that lost its pods, or its gang would be terminated before it ever ran.
const ConditionReasonNeverAvailable = "NeverAvailable"

// minAvailableBreachedCondition computes MinAvailableBreached from the counts
// of ready and scheduled pods and the condition as it was.
//
//   - Unknown (NeverAvailable) until the clique is available for the first
//     time: ready >= minAvailable and scheduled >= minAvailable.
//   - False (SufficientReadyPods) while it is available.
//   - True once it was available and no longer is; the reason says whether
//     too few pods are scheduled (InsufficientScheduledPods) or, with enough
//     scheduled, too few are ready (InsufficientReadyPods).
//
// "Was available once" is read from previous: a status of False or True means
// the clique got there before. It thus lives in the API server and survives
// an operator restart. LastTransitionTime is left to the caller
// (meta.SetStatusCondition) so it moves only when the status does; the
// PodCliqueSet controller takes the True condition's lastTransitionTime as the
// moment the breach began.
func minAvailableBreachedCondition(previous *metav1.Condition, ready, scheduled, minAvailable int) metav1.Condition {
	cond := metav1.Condition{Type: groveconstants.ConditionTypeMinAvailableBreached}
	counts := fmt.Sprintf("%d ready and %d scheduled of minAvailable %d", ready, scheduled, minAvailable)
	wasAvailable := previous != nil &&
		(previous.Status == metav1.ConditionFalse || previous.Status == metav1.ConditionTrue)
	switch {
	case ready >= minAvailable && scheduled >= minAvailable:
		cond.Status = metav1.ConditionFalse
		cond.Reason = groveconstants.ConditionReasonSufficientReadyPods
		cond.Message = "Enough pods are scheduled and ready: " + counts
	case !wasAvailable:
		cond.Status = metav1.ConditionUnknown
		cond.Reason = ConditionReasonNeverAvailable
		cond.Message = "The clique has not yet had minAvailable pods scheduled and ready: " + counts
	case scheduled < minAvailable:
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonInsufficientScheduledPods
		cond.Message = "Too few pods are scheduled: " + counts
	default:
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonInsufficientReadyPods
		cond.Message = "Too few pods are ready: " + counts
	}
	return cond
}

// scheduledCondition computes PodCliqueScheduled: True while at least
// minAvailable pods have a node.
func scheduledCondition(scheduled, minAvailable int) metav1.Condition {
	cond := metav1.Condition{
		Type:    groveconstants.ConditionTypePodCliqueScheduled,
		Message: fmt.Sprintf("%d of minAvailable %d pods scheduled", scheduled, minAvailable),
	}
	if scheduled >= minAvailable {
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonSufficientScheduledPods
	} else {
		cond.Status = metav1.ConditionFalse
		cond.Reason = groveconstants.ConditionReasonInsufficientScheduledPods
	}
	return cond
}
