package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// newScheme returns the types the manager's client and caches understand:
// the built-in Kubernetes APIs (core, apps, scheduling, coordination, ...).
// copse's own API group joins here once its types exist.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Kubernetes built-in types: %w", err)
	}
	return scheme, nil
}
