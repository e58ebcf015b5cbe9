// Package kueue_test checks copse with Kueue end to end: the real Kueue
// v0.17.1 (its scheduler, its job integrations and its webhooks, run as a
// local process by the framework) next to the real operator binary, the real
// JobSet controller and a real control plane.
package kueue_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestKueue(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "kueue", WithKueue: true, WithJobSet: true, WithOperator: true,
		Operator: framework.OperatorOptions{
			Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
				cfg.Kueue.Enabled = true
				// Crash specs kill the operator; a short lease lets its
				// successor take over in seconds.
				framework.ShortLeases(cfg)
			},
		}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component, the operator, JobSet or Kueue crashed")
})
