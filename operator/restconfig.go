package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/version"
)

// newRESTConfig finds the API server the way every controller-runtime
// program does (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config) and
// applies the configured client rate limits.
func newRESTConfig(cc configv1alpha1.ClientConnectionConfiguration) (*rest.Config, error) {
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	restConfig.QPS = cc.QPS
	restConfig.Burst = int(cc.Burst)
	restConfig.UserAgent = "copse-operator/" + version.Version
	return restConfig, nil
}
