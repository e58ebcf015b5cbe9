// Package podcliquescalinggroup holds the admission rules of the
// PodCliqueScalingGroup. Scaling groups are written by copse's controllers
// (and scaled by autoscalers), so the rules are the bounds a controller bug
// or a manual edit must not break.
package podcliquescalinggroup

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var (
	replicasPath     = field.NewPath("spec", "replicas")
	minAvailablePath = field.NewPath("spec", "minAvailable")
	cliqueNamesPath  = field.NewPath("spec", "cliqueNames")
)

// ValidateCreate returns every rule a new PodCliqueScalingGroup breaks.
func ValidateCreate(pcsg *copsev1alpha1.PodCliqueScalingGroup) field.ErrorList {
	errs := rules.ReplicasAtLeastOne(pcsg.Spec.Replicas, replicasPath)
	if pcsg.Spec.Replicas >= 1 {
		errs = append(errs, rules.MinAvailableWithinReplicas(pcsg.Spec.MinAvailable, pcsg.Spec.Replicas, minAvailablePath, replicasPath)...)
	}
	if len(pcsg.Spec.CliqueNames) == 0 {
		errs = append(errs, field.Required(cliqueNamesPath, "a scaling group needs at least one clique"))
	}
	for i, clique := range pcsg.Spec.CliqueNames {
		errs = append(errs, rules.DNSLabel(clique, cliqueNamesPath.Index(i))...)
	}
	return append(errs, rules.NoDuplicates(pcsg.Spec.CliqueNames, cliqueNamesPath.Index)...)
}

// ValidateUpdate returns every rule an updated PodCliqueScalingGroup breaks.
// An update that leaves the spec alone is always allowed, so that an object
// stored before a rule existed can still be finalized and deleted.
func ValidateUpdate(old, pcsg *copsev1alpha1.PodCliqueScalingGroup) field.ErrorList {
	if equality.Semantic.DeepEqual(old.Spec, pcsg.Spec) {
		return nil
	}
	return ValidateCreate(pcsg)
}
