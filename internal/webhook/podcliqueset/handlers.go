package podcliqueset

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "PodCliqueSet"

// Defaulter is the mutating webhook: it applies Default, and on creation
// DefaultForKueue and DefaultMNNVLGroup.
type Defaulter struct {
	// KueueEnabled is the operator configuration's kueue.enabled.
	KueueEnabled bool
	// MNNVLDefaultGroup is the operator configuration's mnnvl.defaultGroup.
	MNNVLDefaultGroup string
}

var _ admission.Defaulter[*copsev1alpha1.PodCliqueSet] = Defaulter{}

// Default implements admission.Defaulter.
func (d Defaulter) Default(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) error {
	Default(pcs)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create {
		DefaultForKueue(pcs, d.KueueEnabled)
		DefaultMNNVLGroup(pcs, d.MNNVLDefaultGroup)
	}
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
	// KueueEnabled is the operator configuration's kueue.enabled
	// (ValidateKueue).
	KueueEnabled bool
	// KueueMaxPodSets is the Kueue installed's limit of pod sets
	// (ValidateKueue); 0 for kueue.DefaultMaxPodSets.
	KueueMaxPodSets int
}

var _ admission.Validator[*copsev1alpha1.PodCliqueSet] = Validator{}

// ValidateCreate implements admission.Validator.
func (v Validator) ValidateCreate(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	errs := append(ValidateCreate(pcs), ValidateSize(nil, pcs, v.Limits)...)
	errs = append(errs, ValidateMNNVL(nil, pcs, v.MNNVLEnabled)...)
	errs = append(errs, ValidateKueue(nil, pcs, v.KueueEnabled, v.KueueMaxPodSets)...)
	topologyErrs, err := v.validateTopology(ctx, pcs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, topologyErrs...)
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, errs)
}

// ValidateUpdate implements admission.Validator. Warnings are given only
// when the spec changes, so that metadata updates by controllers stay quiet.
// The MNNVL group annotation is immutable, and the Kueue queue label changes
// only while suspended, even where the spec is not changed.
func (v Validator) ValidateUpdate(_ context.Context, old, pcs *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	metadataErrs := append(ValidateMNNVL(old, pcs, v.MNNVLEnabled), ValidateKueue(old, pcs, v.KueueEnabled, v.KueueMaxPodSets)...)
	if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
		return nil, rules.ToAdmissionError(kind, pcs.Name, metadataErrs)
	}
	errs := append(ValidateUpdate(old, pcs), ValidateSize(old, pcs, v.Limits)...)
	errs = append(errs, metadataErrs...)
	return Warnings(pcs), rules.ToAdmissionError(kind, pcs.Name, errs)
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}
