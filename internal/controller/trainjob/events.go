package trainjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
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

// recordTransitions emits one event per condition that became true in the
// status just written.
func (r *Reconciler) recordTransitions(tj *trainerv1alpha1.TrainJob, before, after trainerv1alpha1.TrainJobStatus) {
	for _, c := range after.Conditions {
		if c.Status != "True" || meta.IsStatusConditionTrue(before.Conditions, c.Type) {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Type == trainerv1alpha1.TrainJobFailed || c.Type == trainerv1alpha1.TrainJobTopologyLevelsUnavailable ||
			c.Type == trainerv1alpha1.TrainJobBackendRefused {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(tj, nil, eventType, c.Reason, c.Type, "%s", c.Message)
	}
}
