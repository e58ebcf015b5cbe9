package blueprint

import (
	"maps"
	"strconv"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// RefreshPodClique brings an existing PodClique towards desired, the one
// the PodCliqueSet's template builds now under the same name, and reports
// whether it changed. What follows the template:
//
//   - the pod template (podSpec, labels, annotations), when the template's
//     hash (labels.PodTemplateHashKey) differs: the hash is computed from the
//     template, never from the stored object, so fields the API server
//     defaults never look like a change;
//   - minAvailable, and the gang label (a scaling group's minAvailable
//     decides which gang a group replica's pods join);
//   - replicas, by TemplateReplicas.
//
// An object of another run of its replica (the attempt label differs) is
// left alone: it is being deleted, and the new run is built afresh.
func RefreshPodClique(existing, desired *copsev1alpha1.PodClique) bool {
	if existing.Labels[labels.AttemptKey] != desired.Labels[labels.AttemptKey] {
		return false
	}
	changed := false
	lastApplied := existing.Annotations[labels.TemplateReplicasAnnotation]
	if existing.Labels[labels.PodTemplateHashKey] != desired.Labels[labels.PodTemplateHashKey] {
		existing.Spec.PodSpec = *desired.Spec.PodSpec.DeepCopy()
		existing.Labels = maps.Clone(desired.Labels)
		// The record of the template count applied is kept: it is not
		// part of the pod template.
		existing.Annotations = maps.Clone(desired.Annotations)
		delete(existing.Annotations, labels.TemplateReplicasAnnotation)
		if lastApplied != "" {
			existing.Annotations = labels.Merge(existing.Annotations, map[string]string{labels.TemplateReplicasAnnotation: lastApplied})
		}
		changed = true
	}
	if gang := desired.Labels[labels.PodGangKey]; existing.Labels[labels.PodGangKey] != gang {
		existing.Labels = labels.Merge(existing.Labels, map[string]string{labels.PodGangKey: gang})
		changed = true
	}
	if desired.Spec.MinAvailable != nil && !ptr.Equal(existing.Spec.MinAvailable, desired.Spec.MinAvailable) {
		existing.Spec.MinAvailable = ptr.To(*desired.Spec.MinAvailable)
		changed = true
	}
	return refreshReplicas(existing, &existing.Spec.Replicas, lastApplied, desired.Annotations[labels.TemplateReplicasAnnotation]) || changed
}

// RefreshScalingGroup brings an existing PodCliqueScalingGroup towards
// desired: minAvailable, and replicas by TemplateReplicas. Its members are
// immutable. Objects of another run are left alone.
func RefreshScalingGroup(existing, desired *copsev1alpha1.PodCliqueScalingGroup) bool {
	if existing.Labels[labels.AttemptKey] != desired.Labels[labels.AttemptKey] {
		return false
	}
	changed := false
	if desired.Spec.MinAvailable != nil && !ptr.Equal(existing.Spec.MinAvailable, desired.Spec.MinAvailable) {
		existing.Spec.MinAvailable = ptr.To(*desired.Spec.MinAvailable)
		changed = true
	}
	lastApplied := existing.Annotations[labels.TemplateReplicasAnnotation]
	return refreshReplicas(existing, &existing.Spec.Replicas, lastApplied, desired.Annotations[labels.TemplateReplicasAnnotation]) || changed
}

// TemplateReplicas is the rule for a replica count that both the template
// and someone else (kubectl scale, an autoscaler) set. current is the
// object's spec.replicas; lastApplied the template count copse applied
// last (labels.TemplateReplicasAnnotation, "" if none is recorded);
// template the template's count now, "" for an autoscaled object (an
// autoScalingConfig or scaleConfig). It returns the object's count:
//
//   - autoscaled: the scale subresource owns the count; the template's is
//     never applied (as Grove).
//   - no record (an object made before copse kept one): nothing is known of
//     a change, so the count stays; the template's is recorded from now on.
//   - the template's count changed since it was last applied: it is applied.
//   - otherwise the count stays, so a kubectl scale sticks until the
//     template's count changes.
func TemplateReplicas(current int32, lastApplied, template string) int32 {
	if template == "" || lastApplied == "" || lastApplied == template {
		return current
	}
	n, err := strconv.ParseInt(template, 10, 32)
	if err != nil {
		return current
	}
	return int32(n)
}

// refreshReplicas applies TemplateReplicas to *replicas and records the
// template count (removes the record of an autoscaled object); it reports
// whether anything changed.
func refreshReplicas(obj client.Object, replicas *int32, lastApplied, template string) bool {
	changed := false
	if n := TemplateReplicas(*replicas, lastApplied, template); n != *replicas {
		*replicas = n
		changed = true
	}
	annotations := obj.GetAnnotations()
	current, recorded := annotations[labels.TemplateReplicasAnnotation]
	switch {
	case template == "" && recorded:
		annotations = maps.Clone(annotations)
		delete(annotations, labels.TemplateReplicasAnnotation)
		obj.SetAnnotations(annotations)
		return true
	case template != "" && current != template:
		obj.SetAnnotations(labels.Merge(annotations, map[string]string{labels.TemplateReplicasAnnotation: template}))
		return true
	}
	return changed
}
