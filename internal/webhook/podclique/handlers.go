package podclique

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "PodClique"

// Validator is the validating webhook: it applies ValidateCreate and ValidateUpdate.
type Validator struct{}

var _ admission.Validator[*copsev1alpha1.PodClique] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, pclq *copsev1alpha1.PodClique) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, pclq.Name, ValidateCreate(pclq))
}

// ValidateUpdate implements admission.Validator.
func (Validator) ValidateUpdate(_ context.Context, old, pclq *copsev1alpha1.PodClique) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, pclq.Name, ValidateUpdate(old, pclq))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodClique) (admission.Warnings, error) {
	return nil, nil
}
