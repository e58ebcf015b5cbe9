package podclique

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/training"
)

var autoScalingConfigPath = field.NewPath("spec", "autoScalingConfig")

// ValidateTraining returns the GREP-0285 rules pclq breaks when owner, the
// PodCliqueSet it belongs to (nil if none), is a Training workload: its
// replica count cannot change, and it cannot have an autoscaler. old is nil
// on create. The operator creates a Training PodClique with the template's
// replicas and no autoScalingConfig, and never changes either, so it is not
// affected.
func ValidateTraining(old, pclq *copsev1alpha1.PodClique, owner *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !training.IsTraining(owner) {
		return nil
	}
	var errs field.ErrorList
	if old != nil && old.Spec.Replicas != pclq.Spec.Replicas {
		errs = append(errs, training.ReplicasImmutable(replicasPath, owner))
	}
	if pclq.Spec.ScaleConfig != nil {
		errs = append(errs, training.AutoScalingNotAllowed(autoScalingConfigPath, owner))
	}
	return errs
}

// trainingRulesConcern reports whether ValidateTraining could reject the
// change from old (nil on create) to pclq for some owner. Only then does the
// webhook look the owner up.
func trainingRulesConcern(old, pclq *copsev1alpha1.PodClique) bool {
	return (old != nil && old.Spec.Replicas != pclq.Spec.Replicas) || pclq.Spec.ScaleConfig != nil
}
