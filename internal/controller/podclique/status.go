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

// cliqueSucceeded reports whether the clique is done: it already has the
// Succeeded condition, or its pods show now that it has succeeded (in which
// case this reconcile's status write adds the condition).
func cliqueSucceeded(pclq *copsev1alpha1.PodClique, w workloadState, pods []podInfo) bool {
	if meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded) {
		return true
	}
	return w.known && succeededCondition(w.workload, int(pclq.Spec.Replicas), pods) != nil
}

// computeStatus returns the PodClique's status for the pods the cache shows.
// Fields this controller does not own yet (updatedReplicas, hashes, update
// progress, lastErrors, conditions of other types) are carried over. Only
// pods that are neither ended nor terminating are counted in the replica
// fields. now stamps the conditions whose status changes.
//
// The conditions depend on the workload type, so they are left as they are
// when the PodCliqueSet is unknown (w.known false); only the counts are
// updated then. The Succeeded condition, once True, is never touched again.
func computeStatus(pclq *copsev1alpha1.PodClique, pods []podInfo, w workloadState, now metav1.Time) grovecorev1alpha1.PodCliqueStatus {
	status := *pclq.Status.DeepCopy()
	counts := countPods(pods)
	status.ObservedGeneration = ptr.To(pclq.Generation)
	status.Replicas = int32(counts.active)
	status.ReadyReplicas = int32(counts.ready)
	status.ScheduledReplicas = int32(counts.scheduled)
	status.ScheduleGatedReplicas = int32(counts.gated)
	status.Selector = ptr.To(podSelector(pclq.Name))
	if !w.known {
		return status
	}

	minAvail := minAvailable(pclq.Spec)
	succeeded := meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)
	var newlySucceeded *metav1.Condition
	if !succeeded {
		newlySucceeded = succeededCondition(w.workload, int(pclq.Spec.Replicas), pods)
		succeeded = newlySucceeded != nil
	}
	previousBreach := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	conditions := []metav1.Condition{
		scheduledCondition(w.workload, counts, minAvail),
		minAvailableBreachedCondition(previousBreach, breachInput{
			workload:     w.workload,
			counts:       counts,
			minAvailable: minAvail,
			succeeded:    succeeded,
		}),
	}
	if newlySucceeded != nil {
		conditions = append(conditions, *newlySucceeded)
	}
	for _, cond := range conditions {
		cond.ObservedGeneration = pclq.Generation
		cond.LastTransitionTime = now
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	return status
}
