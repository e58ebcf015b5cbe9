package training

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

// RestartPolicyMustBeNever is the error for a pod restartPolicy other than
// Never in a Training workload: a kubelet that restarts a container in place
// would bypass the restart budget (trainingSpec.maxRestarts) and the
// operator's failure detection, since the pod would never fail.
func RestartPolicyMustBeNever(path *field.Path, policy corev1.RestartPolicy) *field.Error {
	return field.Invalid(path, policy, fmt.Sprintf(
		"must be %s when the workload is %s: the operator restarts a Training replica as a whole, within trainingSpec.maxRestarts; a kubelet restart would bypass that budget",
		corev1.RestartPolicyNever, copsev1alpha1.WorkloadTypeTraining))
}

// ImmutableForTraining is the error for a change of a field a Training
// PodClique keeps for its lifetime: its pods are all built from one spec,
// and a restarted replica is rebuilt from the PodCliqueSet's template.
func ImmutableForTraining(path *field.Path, owner *copsev1alpha1.PodCliqueSet) *field.Error {
	return field.Forbidden(path, fmt.Sprintf("is immutable because the owning PodCliqueSet %s has workloadType %s",
		ownerName(owner), copsev1alpha1.WorkloadTypeTraining))
}
