package framework

import (
	"context"
	"fmt"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/process"
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
		if opts.RealNodes > 0 {
			if err := cluster.RealNodeSupport(); err != nil {
				// Said on standard output, where copse-test reads it and
				// reports the suite as skipped rather than passed.
				fmt.Printf("%s%s: %v\n", process.SkipMarker, opts.Name, err)
				ginkgo.Skip("this host cannot run real nodes: " + err.Error())
			}
		}
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
