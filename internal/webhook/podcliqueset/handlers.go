package podcliqueset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
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
// ValidateUpdate, ValidateSize with the operator's limits, and returns
// Warnings as admission warnings.
type Validator struct {
	// Limits are the operator's limits on pods (its configuration's limits
	// section).
	Limits configv1alpha1.LimitsConfiguration
	// MNNVLEnabled is the operator configuration's mnnvl.enabled
	// (ValidateMNNVL).
	MNNVLEnabled bool
	// TopologyAwareScheduling says whether the operator applies
	// topologyConstraints: topologyAwareScheduling.enabled in its
	// configuration, with the Workload API scheduler backend.
	TopologyAwareScheduling bool
	// Reader reads the ClusterTopologyBinding a new PodCliqueSet's
	// constraints name. The operator passes its manager's GetAPIReader().
	Reader client.Reader
}

var _ admission.Validator[*copsev1alpha1.PodCliqueSet] = Validator{}

// ValidateCreate implements admission.Validator.
func (v Validator) ValidateCreate(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	errs := append(ValidateCreate(pcs), ValidateSize(nil, pcs, v.Limits)...)
	errs = append(errs, ValidateMNNVL(nil, pcs, v.MNNVLEnabled)...)
	topologyErrs, err := v.validateTopology(ctx, pcs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, topologyErrs...)
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, errs)
}

// ValidateUpdate implements admission.Validator. Warnings are given only
// when the spec changes, so that metadata updates by controllers stay quiet.
// The MNNVL group annotation is immutable even where the spec is not changed.
func (v Validator) ValidateUpdate(_ context.Context, old, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	mnnvlErrs := ValidateMNNVL(old, pcs, v.MNNVLEnabled)
	if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
		return nil, rules.ToAdmissionError(kind, pcs.Name, mnnvlErrs)
	}
	errs := append(ValidateUpdate(old, pcs), ValidateSize(old, pcs, v.Limits)...)
	errs = append(errs, mnnvlErrs...)
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, errs)
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}
