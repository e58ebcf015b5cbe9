package framework

import (
	"context"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// RunSuite runs the Ginkgo specs of the package as the test t, with
// Gomega's failures reported to Ginkgo: the body of every suite's Test
// function.
func RunSuite(t *testing.T, description string) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, description)
}

// SetupSuite registers what every e2e suite does around its specs, and
// returns the suite's Env, filled in before the first spec:
//   - a BeforeSuite that starts the environment (Setup with opts), then calls
//     ready (if set) for what the suite adds to it, and stops it all when
//     the suite ends;
//   - an AfterEach that fails a spec after which a component crashed
//     (Env.CheckHealthy), with the component's log, instead of letting the
//     next spec time out.
//
// Call it once per suite, at package level:
//
//	var env = framework.SetupSuite(framework.Options{Name: "core", WithOperator: true}, nil)
func SetupSuite(opts Options, ready func(ctx context.Context, env *Env)) *Env {
	env := &Env{}
	ginkgo.BeforeSuite(func(ctx context.Context) {
		gomega.Expect(env.setup(ctx, opts)).To(gomega.Succeed())
		ginkgo.DeferCleanup(env.Teardown)
		if ready != nil {
			ready(ctx, env)
		}
	}, ginkgo.NodeTimeout(SetupTimeout))
	ginkgo.AfterEach(func() {
		gomega.Expect(env.CheckHealthy()).To(gomega.Succeed(), "a component crashed: the control plane, the operator, JobSet or Kueue")
	})
	return env
}
