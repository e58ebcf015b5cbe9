package podclique

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/training"
)

var (
	autoScalingConfigPath = field.NewPath("spec", "autoScalingConfig")
	podSpecPath           = field.NewPath("spec", "podSpec")
)

// ValidateTraining returns the GREP-0285 rules pclq breaks when owner, the
// PodCliqueSet it belongs to (nil if none), is a Training workload: its
// replica count, pod spec and minAvailable cannot change, its pods'
// restartPolicy is Never, and it cannot have an autoscaler. old is nil on
// create. The operator creates a Training PodClique from the template, as
// the template's rules allow, and never changes those fields, so it is not
// affected.
func ValidateTraining(old, pclq *copsev1alpha1.PodClique, owner *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !owner.IsTraining() {
		return nil
	}
	var errs field.ErrorList
	if old != nil && old.Spec.Replicas != pclq.Spec.Replicas {
		errs = append(errs, training.ReplicasImmutable(replicasPath, owner))
	}
	if old != nil && !equality.Semantic.DeepEqual(old.Spec.PodSpec, pclq.Spec.PodSpec) {
		errs = append(errs, training.ImmutableForTraining(podSpecPath, owner))
	}
	if old != nil && copsev1alpha1.CliqueMinAvailable(old.Spec) != copsev1alpha1.CliqueMinAvailable(pclq.Spec) {
		errs = append(errs, training.ImmutableForTraining(minAvailablePath, owner))
	}
	if policy := pclq.Spec.PodSpec.RestartPolicy; policy != "" && policy != corev1.RestartPolicyNever {
		errs = append(errs, training.RestartPolicyMustBeNever(podSpecPath.Child("restartPolicy"), policy))
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
	changed := old != nil && (old.Spec.Replicas != pclq.Spec.Replicas ||
		!equality.Semantic.DeepEqual(old.Spec.PodSpec, pclq.Spec.PodSpec) ||
		copsev1alpha1.CliqueMinAvailable(old.Spec) != copsev1alpha1.CliqueMinAvailable(pclq.Spec))
	policy := pclq.Spec.PodSpec.RestartPolicy
	return changed || pclq.Spec.ScaleConfig != nil || (policy != "" && policy != corev1.RestartPolicyNever)
}
