package mnnvl

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ValidateGroup checks a new grove.io/mnnvl-group value at path: "none" or
// a DNS-1123 label (it becomes part of a ComputeDomain's name) that is not
// "mnnvl" and does not end in "-mnnvl" (those end TrainJobs' ComputeDomain
// names, TrainJobComputeDomainName), and a group other than "none" only
// while MNNVL is enabled in the operator configuration. Nil when the value
// is fine.
func ValidateGroup(path *field.Path, value string, enabled bool) *field.Error {
	if msgs := validation.IsDNS1123Label(value); value != copsev1alpha1.MNNVLGroupNone && len(msgs) > 0 {
		return field.Invalid(path, value, fmt.Sprintf("must be %q or a DNS-1123 label: %s",
			copsev1alpha1.MNNVLGroupNone, strings.Join(msgs, "; ")))
	}
	if value == trainJobDomainSuffix || strings.HasSuffix(value, "-"+trainJobDomainSuffix) {
		return field.Invalid(path, value, fmt.Sprintf("must not be %q or end in %q: ComputeDomains named so are TrainJobs' (<trainjob>-%s), "+
			"and a replica's ComputeDomain <podcliqueset>-<replica>-<group> could take a TrainJob's name", trainJobDomainSuffix, "-"+trainJobDomainSuffix, trainJobDomainSuffix))
	}
	if TakesPart(value) && !enabled {
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
