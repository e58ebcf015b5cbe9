package mnnvl

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ValidateGroup checks a new grove.io/mnnvl-group value at path: "none",
// which is always allowed, or a group name (copsev1alpha1.MNNVLGroupNameErrors:
// a DNS-1123 label, as it becomes part of a ComputeDomain's name, that is
// not "mnnvl" and does not end in "-mnnvl") while MNNVL is enabled in the
// operator configuration. Nil when the value is fine.
func ValidateGroup(path *field.Path, value string, enabled bool) *field.Error {
	if value == copsev1alpha1.MNNVLGroupNone {
		return nil
	}
	if msgs := validation.IsDNS1123Label(value); len(msgs) > 0 {
		return field.Invalid(path, value, fmt.Sprintf("must be %q or a DNS-1123 label: %s",
			copsev1alpha1.MNNVLGroupNone, strings.Join(msgs, "; ")))
	}
	if msgs := copsev1alpha1.MNNVLGroupNameErrors(value); len(msgs) > 0 {
		return field.Invalid(path, value, strings.Join(msgs, "; "))
	}
	if !enabled {
		return field.Forbidden(path, fmt.Sprintf(
			"MNNVL is not enabled in the operator configuration (mnnvl.enabled); only %q is allowed", copsev1alpha1.MNNVLGroupNone))
	}
	return nil
}

// ValidateGroupUnchanged keeps a grove.io/mnnvl-group annotation as it was
// created (set, unset and value alike): the ComputeDomains already made for
// it would otherwise no longer match. Nil when unchanged.
func ValidateGroupUnchanged(path *field.Path, old, current map[string]string) *field.Error {
	oldValue, oldSet := old[GroupAnnotation]
	value, set := current[GroupAnnotation]
	if oldValue == value && oldSet == set {
		return nil
	}
	wasText := "was not set"
	if oldSet {
		wasText = fmt.Sprintf("was %q", oldValue)
	}
	if !set {
		return field.Forbidden(path, "field is immutable: cannot be removed ("+wasText+")")
	}
	return field.Invalid(path, value, "field is immutable ("+wasText+")")
}
