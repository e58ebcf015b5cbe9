package training

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ReplicasImmutable is the error for a replica count changed on an object of
// the Training PodCliqueSet owner: a Training job runs with the size it was
// created with, at every level (GREP-0285).
func ReplicasImmutable(path *field.Path, owner *copsev1alpha1.PodCliqueSet) *field.Error {
	return field.Forbidden(path, fmt.Sprintf("is immutable because the owning PodCliqueSet %s has workloadType %s",
		ownerName(owner), copsev1alpha1.WorkloadTypeTraining))
}

// AutoScalingNotAllowed is the error for an autoscaler configuration on an
// object of the Training PodCliqueSet owner: the operator creates an HPA for
// every such configuration, and a Training job must not be scaled.
func AutoScalingNotAllowed(path *field.Path, owner *copsev1alpha1.PodCliqueSet) *field.Error {
	return field.Forbidden(path, fmt.Sprintf("is not allowed because the owning PodCliqueSet %s has workloadType %s",
		ownerName(owner), copsev1alpha1.WorkloadTypeTraining))
}

func ownerName(owner *copsev1alpha1.PodCliqueSet) string {
	return owner.Namespace + "/" + owner.Name
}
