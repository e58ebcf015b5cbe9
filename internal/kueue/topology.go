package kueue

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TopologyGVK is the kind a ClusterTopologyBinding is mirrored to.
var TopologyGVK = kueue.SchemeGroupVersion.WithKind("Topology")

// SchedulerName names Kueue in a ClusterTopologyBinding's
// status.schedulerTopologyStatuses (the entry of the Topology copse keeps for
// it) and in its spec.schedulerTopologyBindings.
const SchedulerName = "kueue"

// MaxTopologyLevels is the most levels Kueue's Topology takes (its CRD's
// spec.levels maxItems).
const MaxTopologyLevels = 16

var levelsPath = field.NewPath("spec", "levels")

// Topology is the Kueue Topology that mirrors binding: the binding's name,
// one level per binding level, node label keys broadest first. The errors
// name each level of the binding that Kueue's Topology validation would
// refuse (then the Topology is nil): more than MaxTopologyLevels levels, or
// kubernetes.io/hostname at any level but the narrowest. Kueue also
// requires unique keys, which the binding's own webhook already does.
func Topology(binding *copsev1alpha1.ClusterTopologyBinding) (*kueue.Topology, field.ErrorList) {
	levels := binding.Spec.Levels
	var errs field.ErrorList
	if len(levels) > MaxTopologyLevels {
		errs = append(errs, field.TooMany(levelsPath, len(levels), MaxTopologyLevels))
	}
	for i, l := range levels {
		if l.Key == corev1.LabelHostname && i != len(levels)-1 {
			errs = append(errs, field.Invalid(levelsPath.Index(i).Child("key"), l.Key,
				"Kueue's Topology takes kubernetes.io/hostname only as its last (narrowest) level"))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	t := &kueue.Topology{
		TypeMeta:   metav1.TypeMeta{APIVersion: TopologyGVK.GroupVersion().String(), Kind: TopologyGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: binding.Name},
	}
	for _, l := range levels {
		t.Spec.Levels = append(t.Spec.Levels, kueue.TopologyLevel{NodeLabel: l.Key})
	}
	return t, nil
}

// TopologyLevels lists a Topology's node label keys, broadest first.
func TopologyLevels(t *kueue.Topology) []string {
	out := make([]string, len(t.Spec.Levels))
	for i, l := range t.Spec.Levels {
		out[i] = l.NodeLabel
	}
	return out
}

// BindingKeys lists a binding's node label keys, broadest first.
func BindingKeys(binding *copsev1alpha1.ClusterTopologyBinding) []string {
	out := make([]string, len(binding.Spec.Levels))
	for i, l := range binding.Spec.Levels {
		out[i] = l.Key
	}
	return out
}

// TopologyMatches reports whether t's levels are binding's keys in order.
func TopologyMatches(t *kueue.Topology, binding *copsev1alpha1.ClusterTopologyBinding) bool {
	return slices.Equal(TopologyLevels(t), BindingKeys(binding))
}
