package podclique

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
	"github.com/copse-dev/copse/internal/webhook/training"
)

const kind = "PodClique"

// Validator is the validating webhook: it applies ValidateCreate and
// ValidateUpdate, ValidateSize with the operator's limits, and
// ValidateTraining with the PodClique's PodCliqueSet.
type Validator struct {
	// Reader reads the PodClique's owners, for the Training rules. It is
	// used only for the changes those rules concern (a replica change, an
	// autoScalingConfig). See training.OwningPodCliqueSet for why it should
	// read from the API server rather than a cache.
	Reader client.Reader
	// Limits are the operator's limits on pods.
	Limits configv1alpha1.LimitsConfiguration
	// KueueEnabled is kueue.enabled: a PodClique of a queued PodCliqueSet
	// is not scaled beyond what its Workload holds quota for
	// (training.QueuedScale).
	KueueEnabled bool
}

var _ admission.Validator[*copsev1alpha1.PodClique] = Validator{}

// ValidateCreate implements admission.Validator.
func (v Validator) ValidateCreate(ctx context.Context, pclq *copsev1alpha1.PodClique) (admission.Warnings, error) {
	errs := append(ValidateCreate(pclq), ValidateSize(nil, pclq, v.Limits)...)
	trainingErrs, err := v.validateTraining(ctx, nil, pclq)
	if err != nil {
		return nil, err
	}
	return nil, rules.ToAdmissionError(kind, pclq.Name, append(errs, trainingErrs...))
}

// ValidateUpdate implements admission.Validator.
func (v Validator) ValidateUpdate(ctx context.Context, old, pclq *copsev1alpha1.PodClique) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, pclq.Spec) {
		return nil, nil
	}
	errs := append(ValidateUpdate(old, pclq), ValidateSize(old, pclq, v.Limits)...)
	trainingErrs, err := v.validateTraining(ctx, old, pclq)
	if err != nil {
		return nil, err
	}
	return nil, rules.ToAdmissionError(kind, pclq.Name, append(errs, trainingErrs...))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodClique) (admission.Warnings, error) {
	return nil, nil
}

// validateTraining looks the owner up only when a Training rule could
// apply, so that the controllers' routine writes cost no API read. A failed
// lookup is an internal error: the request is refused, not admitted
// unchecked.
func (v Validator) validateTraining(ctx context.Context, old, pclq *copsev1alpha1.PodClique) (field.ErrorList, error) {
	if !trainingRulesConcern(old, pclq) {
		return nil, nil
	}
	owner, err := training.OwningPodCliqueSet(ctx, v.Reader, pclq)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return append(ValidateTraining(old, pclq, owner), ValidateQueued(old, pclq, owner, v.KueueEnabled)...), nil
}
