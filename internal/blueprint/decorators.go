package blueprint

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodDecorator finishes a pod that Pod built: it adds what one part of copse
// needs on every pod (gang membership, a finalizer, a resource claim, a
// scheduling gate). It reads only the pod and its context, so it is a pure
// function and table-tested where it is defined. An error means the clique
// cannot have pods until its spec or labels change.
type PodDecorator struct {
	// Name says which part of copse the decorator belongs to, in errors.
	Name string
	// Decorate changes pod in place.
	Decorate func(pod *corev1.Pod, pc PodContext) error
}

// BuildPod is Pod followed by every decorator, in order.
func BuildPod(pc PodContext, decorators []PodDecorator) (*corev1.Pod, error) {
	pod, err := Pod(pc)
	if err != nil {
		return nil, err
	}
	for _, d := range decorators {
		if err := d.Decorate(pod, pc); err != nil {
			return nil, fmt.Errorf("pod decorator %s: %w", d.Name, err)
		}
	}
	return pod, nil
}
