package foundation_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestFoundation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Foundation Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "foundation", WithJobSet: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component crashed")
})
