package podcliquescalinggroup

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/training"
)

// ValidateTraining returns the GREP-0285 rules an update from old to pcsg
// breaks when owner, the PodCliqueSet it belongs to (nil if none), is a
// Training workload: its replica count cannot change. old is nil on create,
// where nothing is checked: the operator creates the group with the
// template's replicas.
//
// A PodCliqueScalingGroup has no autoscaler field of its own (Grove's
// scaleConfig lives in the PodCliqueSet template, where the CRD rejects it
// for Training), so there is no autoscaling rule here.
func ValidateTraining(old, pcsg *copsev1alpha1.PodCliqueScalingGroup, owner *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !owner.IsTraining() || !trainingRulesConcern(old, pcsg) {
		return nil
	}
	return field.ErrorList{training.ReplicasImmutable(replicasPath, owner)}
}

// trainingRulesConcern reports whether ValidateTraining could reject the
// change from old (nil on create) to pcsg for some owner. Only then does the
// webhook look the owner up.
func trainingRulesConcern(old, pcsg *copsev1alpha1.PodCliqueScalingGroup) bool {
	return old != nil && old.Spec.Replicas != pcsg.Spec.Replicas
}
