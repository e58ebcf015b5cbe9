package podcliquescalinggroup

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
	"github.com/copse-dev/copse/internal/webhook/training"
)

const kind = "PodCliqueScalingGroup"

// Validator is the validating webhook: it applies ValidateCreate and
// ValidateUpdate, and ValidateTraining with the group's PodCliqueSet.
type Validator struct {
	// Reader reads the group's PodCliqueSet, for the Training rules. It is
	// used only when the replica count changes. See
	// training.OwningPodCliqueSet for why it should read from the API server
	// rather than a cache.
	Reader client.Reader
}

var _ admission.Validator[*copsev1alpha1.PodCliqueScalingGroup] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, pcsg.Name, ValidateCreate(pcsg))
}

// ValidateUpdate implements admission.Validator.
func (v Validator) ValidateUpdate(ctx context.Context, old, pcsg *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, pcsg.Spec) {
		return nil, nil
	}
	errs := ValidateUpdate(old, pcsg)
	trainingErrs, err := v.validateTraining(ctx, old, pcsg)
	if err != nil {
		return nil, err
	}
	return nil, rules.ToAdmissionError(kind, pcsg.Name, append(errs, trainingErrs...))
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, nil
}

// validateTraining looks the owner up only when a Training rule could
// apply. A failed lookup is an internal error: the request is refused, not
// admitted unchecked.
func (v Validator) validateTraining(ctx context.Context, old, pcsg *copsev1alpha1.PodCliqueScalingGroup) (field.ErrorList, error) {
	if !trainingRulesConcern(old, pcsg) {
		return nil, nil
	}
	owner, err := training.OwningPodCliqueSet(ctx, v.Reader, pcsg)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return ValidateTraining(old, pcsg, owner), nil
}
