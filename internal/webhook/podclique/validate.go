// Package podclique holds the admission rules of the PodClique. PodCliques
// are written by copse's controllers (and scaled by autoscalers), so the
// rules are the bounds a controller bug or a manual edit must not break.
package podclique

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var (
	replicasPath     = field.NewPath("spec", "replicas")
	minAvailablePath = field.NewPath("spec", "minAvailable")
)

// ValidateCreate returns every rule a new PodClique breaks.
func ValidateCreate(pclq *copsev1alpha1.PodClique) field.ErrorList {
	errs := rules.ReplicasAtLeastOne(pclq.Spec.Replicas, replicasPath)
	if pclq.Spec.Replicas >= 1 {
		errs = append(errs, rules.MinAvailableWithinReplicas(pclq.Spec.MinAvailable, pclq.Spec.Replicas, minAvailablePath, replicasPath)...)
	}
	return errs
}

// ValidateUpdate returns every rule an updated PodClique breaks. An update
// that leaves the spec alone is always allowed, so that an object stored
// before a rule existed can still be finalized and deleted.
func ValidateUpdate(old, pclq *copsev1alpha1.PodClique) field.ErrorList {
	if equality.Semantic.DeepEqual(old.Spec, pclq.Spec) {
		return nil
	}
	return ValidateCreate(pclq)
}
