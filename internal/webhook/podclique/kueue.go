package podclique

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/webhook/training"
)

// ValidateQueued refuses scaling pclq, a PodClique of owner (nil if none),
// beyond what owner's Kueue Workload holds quota for (training.QueuedScale).
// old is nil on create, which the operator does from the template.
func ValidateQueued(old, pclq *copsev1alpha1.PodClique, owner *copsev1alpha1.PodCliqueSet, kueueEnabled bool) field.ErrorList {
	if old == nil || owner == nil {
		return nil
	}
	template := pclq.Labels[labels.CliqueTemplateKey]
	return training.QueuedScale(replicasPath, owner, kueueEnabled, old.Spec.Replicas, pclq.Spec.Replicas,
		training.AdmittedCliqueReplicas(owner, template), fmt.Sprintf("clique %q", template))
}
