package podcliqueset

import (
	"fmt"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Field paths the rules report errors at.
var (
	metadataNamePath = field.NewPath("metadata", "name")
	specPath         = field.NewPath("spec")
	templatePath     = specPath.Child("template")
	cliquesPath      = templatePath.Child("cliques")
	groupsPath       = templatePath.Child("podCliqueScalingGroups")
)

// ValidateCreate returns every rule a new PodCliqueSet breaks. It expects
// the object as the defaulting webhook left it.
func ValidateCreate(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	return validateObject(pcs, nil)
}

// ValidateUpdate returns every rule an update from old to pcs breaks: the
// rules of a new object, the fields that must not change, and, for Training
// workloads, no change of replica counts or of the generation hash.
//
// An update that leaves the spec alone (metadata, finalizers, labels) is
// always allowed, so that an object stored before a rule existed can still
// be labelled, finalized and deleted.
func ValidateUpdate(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
		return nil
	}
	errs := validateObject(pcs, old)
	errs = append(errs, validateImmutableFields(old, pcs)...)
	return append(errs, validateTrainingUpdate(old, pcs)...)
}

// Warnings returns advice about fields that are accepted but have no effect.
func Warnings(pcs *copsev1alpha1.PodCliqueSet) []string {
	if isStartupExplicit(pcs) {
		return nil
	}
	var warnings []string
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique != nil && len(clique.Spec.StartsAfter) > 0 {
			warnings = append(warnings, fmt.Sprintf("%s is ignored unless %s is %s",
				cliquesPath.Index(i).Child("spec", "startsAfter"), templatePath.Child("cliqueStartupType"),
				grovecorev1alpha1.CliqueStartupTypeExplicit))
		}
	}
	return warnings
}

// validateObject applies the rules of a new object; old is nil on create,
// and lets the few rules Grove introduced after objects existed accept
// values that were already stored.
func validateObject(pcs, old *copsev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateName(pcs.Name)...)
	if pcs.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(specPath.Child("replicas"), pcs.Spec.Replicas, "must not be negative"))
	}
	errs = append(errs, validateTerminationDelay(pcs)...)
	errs = append(errs, validateCliques(pcs, old)...)
	errs = append(errs, validateStartOrder(pcs)...)
	errs = append(errs, validateStartsAfterSucceeded(pcs)...)
	errs = append(errs, validateScalingGroups(pcs)...)
	errs = append(errs, validateResourceSharing(pcs)...)
	errs = append(errs, validateGeneratedNames(pcs)...)
	errs = append(errs, validateTrainingPods(pcs)...)
	errs = append(errs, validateSuccessPolicy(pcs)...)
	errs = append(errs, validateFailurePolicy(pcs)...)
	return errs
}

// validateName requires a DNS-1035 label: the name starts every generated
// name, among them the replicas' headless Services (<name>-<replica>), and a
// Service name must be a DNS-1035 label.
func validateName(name string) field.ErrorList {
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(metadataNamePath, name,
			strings.Join(msgs, "; ")+" (the name prefixes the Service of each replica)")}
	}
	return nil
}

// validateTerminationDelay follows Grove for Inference, where a delay of 0
// would recreate a replica on its first missing pod, before the scheduler
// could replace it. Training recreates a failed replica at once by design.
func validateTerminationDelay(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	delay := pcs.Spec.Template.TerminationDelay
	if delay == nil {
		return nil
	}
	path := templatePath.Child("terminationDelay")
	switch {
	case delay.Duration < 0:
		return field.ErrorList{field.Invalid(path, delay.Duration.String(), "must not be negative")}
	case delay.Duration == 0 && pcs.Spec.WorkloadType != copsev1alpha1.WorkloadTypeTraining:
		return field.ErrorList{field.Invalid(path, delay.Duration.String(),
			fmt.Sprintf("must be greater than 0 unless %s is %s", specPath.Child("workloadType"), copsev1alpha1.WorkloadTypeTraining))}
	}
	return nil
}

func isStartupExplicit(pcs *copsev1alpha1.PodCliqueSet) bool {
	startup := pcs.Spec.Template.StartupType
	return startup != nil && *startup == grovecorev1alpha1.CliqueStartupTypeExplicit
}
