package chaos_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chaos Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	// The harness mixes every feature: TrainJobs on the real JobSet
	// controller, queues in the real Kueue, topology packing.
	env, err = framework.Setup(ctx, framework.Options{Name: "chaos", WithOperator: true, WithJobSet: true, WithKueue: true,
		Operator: framework.OperatorOptions{Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.Kueue.Enabled = true
			cfg.TopologyAwareScheduling.Enabled = true
			// The harness kills the operator many times: each successor
			// must lead within seconds.
			framework.ShortLeases(cfg)
		}}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component, the operator, JobSet or Kueue crashed")
})
