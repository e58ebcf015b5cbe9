package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// newScheme returns the types the manager's client and caches understand:
// the built-in Kubernetes APIs (core, apps, scheduling, coordination, ...),
// copse's grove.io/v1alpha1 and trainer.kubeflow.org/v1alpha1 kinds, and
// JobSet, which the TrainJob front-end builds, and Kueue's kinds, which the
// Kueue integration (kueue.enabled) reads and writes.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Kubernetes built-in types: %w", err)
	}
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering grove.io/v1alpha1 types: %w", err)
	}
	if err := trainerv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering trainer.kubeflow.org/v1alpha1 types: %w", err)
	}
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering jobset.x-k8s.io/v1alpha2 types: %w", err)
	}
	if err := kueuev1beta2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering kueue.x-k8s.io/v1beta2 types: %w", err)
	}
	return scheme, nil
}
