package trainjob

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// RuntimeValidator checks TrainingRuntimes (and, through
// ClusterRuntimeValidator, ClusterTrainingRuntimes): the steps' jobs and
// containers, and a warning for a TTL under a minute.
type RuntimeValidator struct{}

var _ admission.Validator[*trainerv1alpha1.TrainingRuntime] = RuntimeValidator{}

// ValidateCreate implements admission.Validator.
func (RuntimeValidator) ValidateCreate(_ context.Context, rt *trainerv1alpha1.TrainingRuntime) (admission.Warnings, error) {
	return validateRuntime(trainerv1alpha1.TrainingRuntimeKind, rt.Name, nil, &rt.Spec)
}

// ValidateUpdate implements admission.Validator.
func (RuntimeValidator) ValidateUpdate(_ context.Context, old, rt *trainerv1alpha1.TrainingRuntime) (admission.Warnings, error) {
	return validateRuntime(trainerv1alpha1.TrainingRuntimeKind, rt.Name, &old.Spec, &rt.Spec)
}

// ValidateDelete implements admission.Validator; deleting is always allowed
// (the in-use finalizer holds a runtime a TrainJob still needs).
func (RuntimeValidator) ValidateDelete(context.Context, *trainerv1alpha1.TrainingRuntime) (admission.Warnings, error) {
	return nil, nil
}

// ClusterRuntimeValidator checks ClusterTrainingRuntimes.
type ClusterRuntimeValidator struct{}

var _ admission.Validator[*trainerv1alpha1.ClusterTrainingRuntime] = ClusterRuntimeValidator{}

// ValidateCreate implements admission.Validator.
func (ClusterRuntimeValidator) ValidateCreate(_ context.Context, rt *trainerv1alpha1.ClusterTrainingRuntime) (admission.Warnings, error) {
	return validateRuntime(trainerv1alpha1.ClusterTrainingRuntimeKind, rt.Name, nil, &rt.Spec)
}

// ValidateUpdate implements admission.Validator.
func (ClusterRuntimeValidator) ValidateUpdate(_ context.Context, old, rt *trainerv1alpha1.ClusterTrainingRuntime) (admission.Warnings, error) {
	return validateRuntime(trainerv1alpha1.ClusterTrainingRuntimeKind, rt.Name, &old.Spec, &rt.Spec)
}

// ValidateDelete implements admission.Validator.
func (ClusterRuntimeValidator) ValidateDelete(context.Context, *trainerv1alpha1.ClusterTrainingRuntime) (admission.Warnings, error) {
	return nil, nil
}

// validateRuntime validates a new or changed spec; an update that leaves the
// spec alone (a finalizer, a label) passes untouched.
func validateRuntime(kind, name string, old, spec *trainerv1alpha1.TrainingRuntimeSpec) (admission.Warnings, error) {
	if old != nil && equality.Semantic.DeepEqual(*old, *spec) {
		return nil, nil
	}
	return trainjob.RuntimeWarnings(spec), rules.ToGroupAdmissionError(trainerv1alpha1.GroupName, kind, name, trainjob.ValidateRuntime(spec))
}
