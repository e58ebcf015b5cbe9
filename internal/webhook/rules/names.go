package rules

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DNSLabel requires name to be a non-empty DNS-1123 label. Clique and
// scaling-group names become segments of pod hostnames and label values,
// both of which must be DNS labels.
func DNSLabel(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "must be a non-empty DNS label (lower-case letters, digits and '-')")}
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, name, strings.Join(msgs, "; "))}
	}
	return nil
}

// NoDuplicates reports every element of values that repeats an earlier one,
// at pathOf(its index). Empty values are skipped: they are reported as
// missing by the caller's own checks.
func NoDuplicates(values []string, pathOf func(i int) *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(values))
	for i, v := range values {
		if v == "" {
			continue
		}
		if seen[v] {
			errs = append(errs, field.Duplicate(pathOf(i), v))
		}
		seen[v] = true
	}
	return errs
}
