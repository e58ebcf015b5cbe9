package podcliquescalinggroup

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "PodCliqueScalingGroup"

// Validator is the validating webhook: it applies ValidateCreate and ValidateUpdate.
type Validator struct{}

var _ admission.Validator[*copsev1alpha1.PodCliqueScalingGroup] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, pcsg.Name, ValidateCreate(pcsg))
}

// ValidateUpdate implements admission.Validator.
func (Validator) ValidateUpdate(_ context.Context, old, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, pcsg.Name, ValidateUpdate(old, pcsg))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, nil
}
