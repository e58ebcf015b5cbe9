package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// newScheme returns the types the manager's client and caches understand:
// the built-in Kubernetes APIs (core, apps, scheduling, coordination, ...)
// and copse's grove.io/v1alpha1 kinds.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Kubernetes built-in types: %w", err)
	}
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering grove.io/v1alpha1 types: %w", err)
	}
	return scheme, nil
}
