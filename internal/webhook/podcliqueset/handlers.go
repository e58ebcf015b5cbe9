package podcliqueset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "PodCliqueSet"

// Defaulter is the mutating webhook: it applies Default.
type Defaulter struct{}

var _ admission.Defaulter[*copsev1alpha1.PodCliqueSet] = Defaulter{}

// Default implements admission.Defaulter.
func (Defaulter) Default(_ context.Context, pcs *copsev1alpha1.PodCliqueSet) error {
	Default(pcs)
	return nil
}

// Validator is the validating webhook: it applies ValidateCreate and
// ValidateUpdate, and returns Warnings as admission warnings.
type Validator struct{}

var _ admission.Validator[*copsev1alpha1.PodCliqueSet] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, ValidateCreate(pcs))
}

// ValidateUpdate implements admission.Validator. Warnings are given only
// when the spec changes, so that metadata updates by controllers stay quiet.
func (Validator) ValidateUpdate(_ context.Context, old, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
		return nil, nil
	}
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, ValidateUpdate(old, pcs))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}
