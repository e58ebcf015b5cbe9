// Package inference_test checks workloadType Inference end to end against
// Grove's behaviour: rolling updates (RollingRecreate and OnDelete),
// autoscaling through HorizontalPodAutoscalers and the scale subresources,
// shared ResourceClaims, and the scenarios of Grove's own e2e suite (gang
// scheduling, gang termination, scaling, startup ordering), with the real
// operator binary against a real control plane: the kube-scheduler places
// every pod and kube-controller-manager's HPA controller scales.
package inference_test

import (
	"testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "inference", NVIDIADRA: true, WithOperator: true, Operator: framework.OperatorOptions{
	Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
		// The rollout specs kill the operator mid-rollout; a short
		// lease lets its successor take over in seconds.
		framework.ShortLeases(cfg)
	},
}}, nil)

func TestInference(t *testing.T) { framework.RunSuite(t, "Inference Suite") }
