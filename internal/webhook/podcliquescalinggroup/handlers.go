package podcliquescalinggroup

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

const kind = "PodCliqueScalingGroup"

// Validator is the validating webhook: it applies ValidateCreate and
// ValidateUpdate, and ValidateTraining and ValidateSize with the group's
// PodCliqueSet.
type Validator struct {
	// Reader reads the group's PodCliqueSet, for the Training and size
	// rules. It is used only on create and when the replica count or the
	// cliques change. See training.OwningPodCliqueSet for why it should
	// read from the API server rather than a cache.
	Reader client.Reader
	// Limits are the operator's limits on pods.
	Limits configv1alpha1.LimitsConfiguration
	// KueueEnabled is kueue.enabled: a group of a queued PodCliqueSet is
	// not scaled beyond what its Workload holds quota for
	// (training.QueuedScale).
	KueueEnabled bool
}

var _ admission.Validator[*copsev1alpha1.PodCliqueScalingGroup] = Validator{}

// ValidateCreate implements admission.Validator.
func (v Validator) ValidateCreate(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	ownerErrs, err := v.validateWithOwner(ctx, nil, pcsg)
	if err != nil {
		return nil, err
	}
	return nil, rules.ToAdmissionError(kind, pcsg.Name, append(ValidateCreate(pcsg), ownerErrs...))
}

// ValidateUpdate implements admission.Validator.
func (v Validator) ValidateUpdate(ctx context.Context, old, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, pcsg.Spec) {
		return nil, nil
	}
	ownerErrs, err := v.validateWithOwner(ctx, old, pcsg)
	if err != nil {
		return nil, err
	}
	return nil, rules.ToAdmissionError(kind, pcsg.Name, append(ValidateUpdate(old, pcsg), ownerErrs...))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, nil
}

// validateWithOwner applies the rules that need the owning PodCliqueSet,
// looking it up only when one of them could refuse the change. A failed
// lookup is an internal error: the request is refused, not admitted
// unchecked.
func (v Validator) validateWithOwner(ctx context.Context, old, pcsg *copsev1alpha1.PodCliqueScalingGroup) (field.ErrorList, error) {
	if !trainingRulesConcern(old, pcsg) && !sizeRulesConcern(old, pcsg) {
		return nil, nil
	}
	owner, err := training.OwningPodCliqueSet(ctx, v.Reader, pcsg)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs := append(ValidateTraining(old, pcsg, owner), ValidateQueued(old, pcsg, owner, v.KueueEnabled)...)
	return append(errs, ValidateSize(old, pcsg, owner, v.Limits)...), nil
}
