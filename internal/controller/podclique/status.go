package podclique

import (
	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// minAvailable is spec.minAvailable, which Grove defaults to spec.replicas.
func minAvailable(spec grovecorev1alpha1.PodCliqueSpec) int {
	return int(ptr.Deref(spec.MinAvailable, spec.Replicas))
}

// podSelector selects a PodClique's pods; it is the scale subresource's
// selector, so a HorizontalPodAutoscaler finds the pods' metrics.
func podSelector(podClique string) string {
	return k8slabels.SelectorFromSet(k8slabels.Set{labels.PodCliqueKey: podClique}).String()
}

// computeStatus returns the PodClique's status for the pods the cache shows.
// Fields this controller does not own yet (updatedReplicas, hashes, update
// progress, lastErrors, conditions of other types) are carried over. Only
// pods that are neither ended nor terminating are counted. now stamps the
// conditions whose status changes.
func computeStatus(pclq *copsev1alpha1.PodClique, pods []podInfo, now metav1.Time) grovecorev1alpha1.PodCliqueStatus {
	status := *pclq.Status.DeepCopy()
	var replicas, ready, scheduled, gated int
	for _, p := range pods {
		if !p.active() {
			continue
		}
		replicas++
		if p.ready {
			ready++
		}
		if p.scheduled {
			scheduled++
		} else if p.scheduleGated {
			gated++
		}
	}
	status.ObservedGeneration = ptr.To(pclq.Generation)
	status.Replicas = int32(replicas)
	status.ReadyReplicas = int32(ready)
	status.ScheduledReplicas = int32(scheduled)
	status.ScheduleGatedReplicas = int32(gated)
	status.Selector = ptr.To(podSelector(pclq.Name))

	minAvail := minAvailable(pclq.Spec)
	previousBreach := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	for _, cond := range []metav1.Condition{
		scheduledCondition(scheduled, minAvail),
		minAvailableBreachedCondition(previousBreach, ready, scheduled, minAvail),
	} {
		cond.ObservedGeneration = pclq.Generation
		cond.LastTransitionTime = now
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	return status
}
