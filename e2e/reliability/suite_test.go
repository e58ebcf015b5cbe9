// Package reliability_test checks how copse behaves at its limits and when
// parts of the system fail, with the real operator binary against a real
// control plane: oversized workloads refused with the field to change, the
// operator's webhooks down, the API server restarted under the operator.
package reliability_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestReliability(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Reliability Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// The default lease timings (15s, 10s, 2s), as in production: the
	// API server restart spec checks that the operator rides it out.
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "reliability", WithOperator: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
