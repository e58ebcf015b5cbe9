// Package placement_test checks placement on GPU fleets end to end: topology
// packing of gangs through ClusterTopologyBindings and the kube-scheduler's
// topology-aware workload scheduling, and multi-node NVLink through NVIDIA
// ComputeDomains, with the real operator binary against a real control plane
// whose scheduler makes every placement decision.
package placement_test

import (
	"testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "placement", NVIDIADRA: true, WithJobSet: true, WithOperator: true, Operator: framework.OperatorOptions{
	Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.TopologyAwareScheduling.Enabled = true
		cfg.MNNVL.Enabled = true
		// The crash spec kills the operator; a short lease lets its
		// successor take over in seconds rather than Kubernetes' default 15.
		framework.ShortLeases(cfg)
	},
}}, nil)

func TestPlacement(t *testing.T) { framework.RunSuite(t, "Placement Suite") }
