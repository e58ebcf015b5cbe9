package podcliquescalinggroup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/training"
)

// ValidateQueued refuses scaling pcsg, a scaling group of owner (nil if
// none), beyond what owner's Kueue Workload holds quota for
// (training.QueuedScale). old is nil on create, which the operator does
// from the template.
func ValidateQueued(old, pcsg *copsev1alpha1.PodCliqueScalingGroup, owner *copsev1alpha1.PodCliqueSet, kueueEnabled bool) field.ErrorList {
	if old == nil || owner == nil {
		return nil
	}
	admitted, group := training.AdmittedGroupReplicas(owner, pcsg.Spec.CliqueNames)
	return training.QueuedScale(replicasPath, owner, kueueEnabled, old.Spec.Replicas, pcsg.Spec.Replicas,
		admitted, fmt.Sprintf("scaling group %q", group))
}
