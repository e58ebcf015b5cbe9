package trainjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
)

// Event reasons of the TrainJob controller, besides the condition reasons.
const (
	reasonRuntimeUnavailable  = "RuntimeUnavailable"
	reasonBuildFailed         = "BuildFailed"
	reasonJobSetCreated       = "JobSetCreated"
	reasonPodCliqueSetCreated = "PodCliqueSetCreated"
	// reasonSuspendedOnly: the build could not be made, so only the
	// TrainJob's suspension was carried to its backend object.
	reasonSuspendedOnly = "SuspendedWithoutBuild"
)

// transitionEvents are the events of a status write: one per condition
// that became true, a warning for those that say something went wrong.
func transitionEvents(before, after trainerv1alpha1.TrainJobStatus) []children.Event {
	var out []children.Event
	for _, c := range after.Conditions {
		if c.Status != "True" || meta.IsStatusConditionTrue(before.Conditions, c.Type) {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Type == trainerv1alpha1.TrainJobFailed || c.Type == trainerv1alpha1.TrainJobTopologyLevelsUnavailable ||
			c.Type == trainerv1alpha1.TrainJobBackendRefused {
			eventType = corev1.EventTypeWarning
		}
		out = append(out, children.Event{Type: eventType, Reason: c.Reason, Action: c.Type, Message: c.Message})
	}
	return out
}
