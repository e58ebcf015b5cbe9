// Package clustertopologybinding holds the ClusterTopologyBinding
// validating webhook: the rules Grove's CRD schema leaves to a webhook.
//
// The schema already holds each level's domain to ^[a-z][a-z0-9-]*$ (1-63
// characters), its key to a label-key-like pattern (1-63 characters) and the
// list to at least one level; this webhook adds what a schema cannot say:
// domains and keys are unique across levels, and a key is a label key the
// API server would accept on a node (a prefix must be a DNS subdomain,
// which the schema's pattern does not require).
package clustertopologybinding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "ClusterTopologyBinding"

var (
	levelsPath            = field.NewPath("spec", "levels")
	schedulerBindingsPath = field.NewPath("spec", "schedulerTopologyBindings")
)

// Validate returns every rule the binding's spec breaks.
func Validate(binding *copsev1alpha1.ClusterTopologyBinding) field.ErrorList {
	var errs field.ErrorList
	domainAt := map[string]int{}
	keyAt := map[string]int{}
	for i, l := range binding.Spec.Levels {
		path := levelsPath.Index(i)
		domain := string(l.Domain)
		if j, seen := domainAt[domain]; seen {
			errs = append(errs, duplicate(path.Child("domain"), domain, levelsPath.Index(j), "domain"))
		} else {
			domainAt[domain] = i
		}
		if j, seen := keyAt[l.Key]; seen {
			errs = append(errs, duplicate(path.Child("key"), l.Key, levelsPath.Index(j), "key"))
		} else {
			keyAt[l.Key] = i
		}
		for _, msg := range validation.IsQualifiedName(l.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), l.Key, "must be a node label key: "+msg))
		}
	}
	return errs
}

func duplicate(path *field.Path, value string, first *field.Path, what string) *field.Error {
	err := field.Duplicate(path, value)
	err.Detail = fmt.Sprintf("%s has the same %s: each level's %s is unique", first, what, what)
	return err
}

// Warnings says what is accepted but has no effect.
func Warnings(binding *copsev1alpha1.ClusterTopologyBinding) admission.Warnings {
	if len(binding.Spec.SchedulerTopologyBindings) == 0 {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("%s is ignored: copse's scheduler backend, the kube-scheduler, "+
		"reads the node labels of spec.levels and has no topology object of its own", schedulerBindingsPath)}
}

// Validator is the validating webhook: it applies Validate on creations and
// on updates that change the spec.
type Validator struct{}

var _ admission.Validator[*copsev1alpha1.ClusterTopologyBinding] = Validator{}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, binding *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return Warnings(binding), rules.ToAdmissionError(kind, binding.Name, Validate(binding))
}

// ValidateUpdate implements admission.Validator. An update that leaves the
// spec alone (status, labels, finalizers) passes untouched.
func (Validator) ValidateUpdate(_ context.Context, old, binding *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, binding.Spec) {
		return nil, nil
	}
	return Warnings(binding), rules.ToAdmissionError(kind, binding.Name, Validate(binding))
}

// ValidateDelete implements admission.Validator; deleting is always allowed
// (a PodCliqueSet naming a deleted binding reports it in its condition).
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, nil
}
