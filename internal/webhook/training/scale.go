package training

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var scaleReplicasPath = field.NewPath("spec", "replicas")

// ScaleValidator is the validating webhook of the scale subresource of
// PodCliques or PodCliqueScalingGroups (`kubectl scale`, autoscalers). The
// API server sends it autoscaling/v1 Scale objects, which carry the replica
// count but no owner references, so it reads the scaled object to find its
// PodCliqueSet. It forbids changing the replica count of an object of a
// Training PodCliqueSet, as the object's own webhook does for spec updates.
type ScaleValidator struct {
	// Kind is the scaled kind, "PodClique" or "PodCliqueScalingGroup".
	Kind string
	// NewObject returns an empty object of Kind to read the scaled object into.
	NewObject func() client.Object
	// Reader reads the scaled object and its owners; see OwningPodCliqueSet
	// for why it should not be a cache.
	Reader client.Reader
}

var _ admission.Validator[*autoscalingv1.Scale] = ScaleValidator{}

// ValidateCreate implements admission.Validator; the scale subresource is
// never created.
func (ScaleValidator) ValidateCreate(context.Context, *autoscalingv1.Scale) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate implements admission.Validator.
func (v ScaleValidator) ValidateUpdate(ctx context.Context, old, scale *autoscalingv1.Scale) (admission.Warnings, error) {
	if old.Spec.Replicas == scale.Spec.Replicas {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: scale.Namespace, Name: scale.Name}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		// The request names the scaled object even if the Scale does not.
		key = client.ObjectKey{Namespace: req.Namespace, Name: req.Name}
	}
	if v.Reader == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("no API reader to find the PodCliqueSet of %s %s", v.Kind, key))
	}
	target := v.NewObject()
	if err := v.Reader.Get(ctx, key, target); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: the update fails on its own.
			return nil, nil
		}
		return nil, apierrors.NewInternalError(err)
	}
	owner, err := OwningPodCliqueSet(ctx, v.Reader, target)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !IsTraining(owner) {
		return nil, nil
	}
	return nil, rules.ToAdmissionError(v.Kind, key.Name, field.ErrorList{ReplicasImmutable(scaleReplicasPath, owner)})
}

// ValidateDelete implements admission.Validator; the scale subresource is
// never deleted.
func (ScaleValidator) ValidateDelete(context.Context, *autoscalingv1.Scale) (admission.Warnings, error) {
	return nil, nil
}

// NewPodClique and NewPodCliqueScalingGroup are ScaleValidator.NewObject
// functions.
func NewPodClique() client.Object { return &copsev1alpha1.PodClique{} }

// NewPodCliqueScalingGroup: see NewPodClique.
func NewPodCliqueScalingGroup() client.Object { return &copsev1alpha1.PodCliqueScalingGroup{} }
