package lifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

// OutcomeFinalizer is the pod decorator that puts copsev1alpha1.OutcomeFinalizer
// on every pod of a Training workload, so that a pod cannot vanish before its
// outcome (exit 0, or a counted failure) is recorded in its PodClique's
// status. Inference pods carry no finalizer: their outcome is not recorded.
func OutcomeFinalizer() blueprint.PodDecorator {
	return blueprint.PodDecorator{Name: "training-outcome", Decorate: addOutcomeFinalizer}
}

func addOutcomeFinalizer(pod *corev1.Pod, pc blueprint.PodContext) error {
	if pc.PodCliqueSet.IsTraining() && !slices.Contains(pod.Finalizers, copsev1alpha1.OutcomeFinalizer) {
		pod.Finalizers = append(pod.Finalizers, copsev1alpha1.OutcomeFinalizer)
	}
	return nil
}
