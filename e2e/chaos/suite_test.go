package chaos_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chaos Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	// The harness kills the operator many times: each successor must lead
	// within seconds.
	env, err = framework.Setup(ctx, framework.Options{Name: "chaos", WithOperator: true,
		Operator: framework.OperatorOptions{Configure: framework.ShortLeases}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
