package rules

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ToAdmissionError turns field errors into the error a validating webhook
// returns: nil when there are none, otherwise a 422 Invalid status that the
// API server passes to the client with every field path and rule, e.g.
// `PodCliqueSet.grove.io "llm" is invalid: spec.replicas: Invalid value: -1: ...`.
func ToAdmissionError(kind, name string, errs field.ErrorList) error {
	return ToGroupAdmissionError(copsev1alpha1.GroupName, kind, name, errs)
}

// ToGroupAdmissionError is ToAdmissionError for a kind of another API group
// (trainer.kubeflow.org).
func ToGroupAdmissionError(group, kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: group, Kind: kind}, name, errs)
}
