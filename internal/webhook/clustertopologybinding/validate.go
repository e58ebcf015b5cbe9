// Package clustertopologybinding holds the ClusterTopologyBinding
// validating webhook: the rules Grove's CRD schema leaves to a webhook.
//
// The schema already holds each level's domain to ^[a-z][a-z0-9-]*$ (1-63
// characters), its key to a label-key-like pattern (1-63 characters) and the
// list to at least one level; this webhook adds what a schema cannot say:
// domains and keys are unique across levels, and a key is a label key the
// API server would accept on a node (a prefix must be a DNS subdomain,
// which the schema's pattern does not require); and, as Grove's webhook
// does, each spec.schedulerTopologyBindings entry names a scheduler backend
// the operator runs, at most once, that keeps a topology object of its own
// to bind to. copse's backends keep none a binding could name (Backends), so
// every entry is refused with the reason, rather than accepted and ignored.
package clustertopologybinding

import (
	"context"
	"fmt"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

const kind = "ClusterTopologyBinding"

var (
	levelsPath            = field.NewPath("spec", "levels")
	schedulerBindingsPath = field.NewPath("spec", "schedulerTopologyBindings")
)

// Backends are the scheduler backends the operator runs, as
// spec.schedulerTopologyBindings names them (schedulerName).
type Backends struct {
	// Kueue is kueue.enabled: Kueue admits queued workloads, and copse keeps
	// Kueue's Topology of each binding itself.
	Kueue bool
}

// Validate returns every rule the binding's spec breaks, with backends the
// scheduler backends the operator runs.
func Validate(binding *copsev1alpha1.ClusterTopologyBinding, backends Backends) field.ErrorList {
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
	return append(errs, validateSchedulerBindings(binding.Spec.SchedulerTopologyBindings, backends)...)
}

// validateSchedulerBindings holds each entry to Grove's rules: a scheduler
// backend named at most once, one the operator runs, and one that binds to
// a topology object of its own. None of copse's does: the kube-scheduler
// reads the node labels of spec.levels, and Kueue's Topology is the one copse
// makes for the binding. So every entry breaks a rule, and the error says
// which; Grove refuses the same entries when it does not run their backend.
func validateSchedulerBindings(refs []grovecorev1alpha1.SchedulerTopologyBinding, backends Backends) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, ref := range refs {
		path := schedulerBindingsPath.Index(i).Child("schedulerName")
		if j, dup := seen[ref.SchedulerName]; dup {
			errs = append(errs, duplicate(path, ref.SchedulerName, schedulerBindingsPath.Index(j), "schedulerName"))
			continue
		}
		seen[ref.SchedulerName] = i
		switch {
		case ref.SchedulerName == corev1.DefaultSchedulerName:
			errs = append(errs, field.Invalid(path, ref.SchedulerName, "scheduler backend takes no topology object: "+
				"the kube-scheduler packs gangs by the node label keys of spec.levels, so there is nothing to bind; remove the entry"))
		case ref.SchedulerName == kueue.SchedulerName && backends.Kueue:
			errs = append(errs, field.Invalid(path, ref.SchedulerName, fmt.Sprintf("scheduler backend takes no topology object from a binding: "+
				"copse keeps Kueue's Topology itself, named after this binding (%q), and reports it in status.schedulerTopologyStatuses; remove the entry",
				kueue.SchedulerName)))
		default:
			errs = append(errs, field.Invalid(path, ref.SchedulerName, fmt.Sprintf("scheduler backend is not enabled in copse: "+
				"its scheduler backends are %s", enabledBackends(backends))))
		}
	}
	return errs
}

// enabledBackends lists the schedulerName of each backend the operator runs.
func enabledBackends(backends Backends) string {
	if backends.Kueue {
		return fmt.Sprintf("%q (the kube-scheduler) and %q", corev1.DefaultSchedulerName, kueue.SchedulerName)
	}
	return fmt.Sprintf("%q (the kube-scheduler)", corev1.DefaultSchedulerName)
}

func duplicate(path *field.Path, value string, first *field.Path, what string) *field.Error {
	err := field.Duplicate(path, value)
	err.Detail = fmt.Sprintf("%s has the same %s: each level's %s is unique", first, what, what)
	return err
}

// Validator is the validating webhook: it applies Validate on creations and
// on updates that change the spec.
type Validator struct {
	// Backends are the scheduler backends the operator runs.
	Backends Backends
}

var _ admission.Validator[*copsev1alpha1.ClusterTopologyBinding] = Validator{}

// ValidateCreate implements admission.Validator.
func (v Validator) ValidateCreate(_ context.Context, binding *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, rules.ToAdmissionError(kind, binding.Name, Validate(binding, v.Backends))
}

// ValidateUpdate implements admission.Validator. An update that leaves the
// spec alone (status, labels, finalizers) passes untouched, so a binding
// stored before a rule existed still gets its status.
func (v Validator) ValidateUpdate(_ context.Context, old, binding *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, binding.Spec) {
		return nil, nil
	}
	return nil, rules.ToAdmissionError(kind, binding.Name, Validate(binding, v.Backends))
}

// ValidateDelete implements admission.Validator; deleting is always allowed
// (a PodCliqueSet naming a deleted binding reports it in its condition).
func (Validator) ValidateDelete(context.Context, *copsev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, nil
}
