// Package withoutcomputedomains_test runs Grove's auto-MNNVL cases for a
// cluster that does not serve NVIDIA's ComputeDomain CRD (Grove's
// "unsupported" configurations), on a local control plane without the
// simulated NVIDIA DRA driver: MNNVL disabled, and an operator that refuses
// to start with it enabled. The configurations with the CRD are in
// e2e/placement.
package withoutcomputedomains_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestWithoutComputeDomains(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Placement without ComputeDomains Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "placement-without-computedomains", WithOperator: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
