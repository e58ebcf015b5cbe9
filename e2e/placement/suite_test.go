// Package placement_test checks placement on GPU fleets end to end: topology
// packing of gangs through ClusterTopologyBindings and the kube-scheduler's
// topology-aware workload scheduling, and multi-node NVLink through NVIDIA
// ComputeDomains, with the real operator binary against a real control plane
// whose scheduler makes every placement decision.
package placement_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestPlacement(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Placement Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "placement", NVIDIADRA: true, WithJobSet: true, WithOperator: true, Operator: framework.OperatorOptions{
		Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.TopologyAwareScheduling.Enabled = true
			cfg.MNNVL.Enabled = true
			// The crash spec kills the operator; a short lease lets its
			// successor take over in seconds rather than Kubernetes' default 15.
			framework.ShortLeases(cfg)
		},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
