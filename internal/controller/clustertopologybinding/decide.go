package clustertopologybinding

import (
	"fmt"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// EventLevelsUnavailable is the Warning event of a binding whose Ready
// condition turns False.
const EventLevelsUnavailable = "LevelsUnavailable"

// unavailableLevels lists the levels whose key no node carries, in the
// binding's order.
func unavailableLevels(levels []grovecorev1alpha1.TopologyLevel, nodeLabelKeys sets.Set[string]) []grovecorev1alpha1.TopologyLevel {
	var out []grovecorev1alpha1.TopologyLevel
	for _, l := range levels {
		if !nodeLabelKeys.Has(l.Key) {
			out = append(out, l)
		}
	}
	return out
}

// readyCondition is the binding's Ready condition for the label keys the
// cluster's nodes carry: True while every level's key is on some node, else
// False naming each level (domain and key) no node carries. A level no node
// carries cannot place anything: the kube-scheduler finds no domain of it.
func readyCondition(binding *copsev1alpha1.ClusterTopologyBinding, nodeLabelKeys sets.Set[string]) metav1.Condition {
	missing := unavailableLevels(binding.Spec.Levels, nodeLabelKeys)
	if len(missing) == 0 {
		return metav1.Condition{
			Type:               copsev1alpha1.ConditionTypeReady,
			Status:             metav1.ConditionTrue,
			Reason:             copsev1alpha1.ReasonAllLevelsAvailable,
			Message:            fmt.Sprintf("every level's key is carried by at least one node (%d levels)", len(binding.Spec.Levels)),
			ObservedGeneration: binding.Generation,
		}
	}
	names := make([]string, len(missing))
	for i, l := range missing {
		names[i] = fmt.Sprintf("%s (%s)", l.Domain, l.Key)
	}
	level, them := "level", "it"
	if len(missing) > 1 {
		level, them = "levels", "them"
	}
	return metav1.Condition{
		Type:   copsev1alpha1.ConditionTypeReady,
		Status: metav1.ConditionFalse,
		Reason: copsev1alpha1.ReasonLevelsUnavailable,
		Message: fmt.Sprintf("no node carries the label key of %s %s: a gang packed at %s cannot be placed",
			level, strings.Join(names, ", "), them),
		ObservedGeneration: binding.Generation,
	}
}

// computeStatus is the binding's status for the nodes' label keys and, when
// the Kueue integration is on, the Kueue Topology sync (nil when off). The
// kube-scheduler reads node labels and keeps no topology object of its own;
// Kueue's Topology is the only backend topology copse reports in
// schedulerTopologyStatuses, and KueueTopologySynced is there only while the
// integration is on.
func computeStatus(binding *copsev1alpha1.ClusterTopologyBinding, nodeLabelKeys sets.Set[string], kueueSync *kueueTopologyPlan) grovecorev1alpha1.ClusterTopologyBindingStatus {
	status := *binding.Status.DeepCopy()
	status.ObservedGeneration = binding.Generation
	status.SchedulerTopologyStatuses = nil
	// SetStatusCondition keeps lastTransitionTime unless the status changes.
	meta.SetStatusCondition(&status.Conditions, readyCondition(binding, nodeLabelKeys))
	if kueueSync == nil {
		meta.RemoveStatusCondition(&status.Conditions, copsev1alpha1.ConditionTypeKueueTopologySynced)
		return status
	}
	meta.SetStatusCondition(&status.Conditions, kueueSync.condition)
	status.SchedulerTopologyStatuses = []grovecorev1alpha1.SchedulerTopologyStatus{kueueSync.status}
	return status
}

// transitionEvent is an event to record for a status transition.
type transitionEvent struct {
	eventType, reason, action, message string
}

// transitionEvents are the events for the change from previous to current:
// a Warning when Ready turns False (a binding created unusable counts, as
// it had no Ready condition before). Pure; it runs after the write.
func transitionEvents(previous, current grovecorev1alpha1.ClusterTopologyBindingStatus) []transitionEvent {
	now := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeReady)
	if now == nil || now.Reason != copsev1alpha1.ReasonLevelsUnavailable {
		return nil
	}
	if was := meta.FindStatusCondition(previous.Conditions, copsev1alpha1.ConditionTypeReady); was != nil && was.Reason == now.Reason {
		return nil
	}
	return []transitionEvent{{corev1.EventTypeWarning, EventLevelsUnavailable, "CheckLevels", now.Message}}
}

// labelKeys is the set of label keys any of the nodes carries.
func labelKeys(nodes []metav1.PartialObjectMetadata) sets.Set[string] {
	keys := sets.New[string]()
	for _, n := range nodes {
		for k := range n.Labels {
			keys.Insert(k)
		}
	}
	return keys
}
