// Package inference_test checks workloadType Inference end to end against
// Grove's behaviour: rolling updates (RollingRecreate and OnDelete),
// autoscaling through HorizontalPodAutoscalers and the scale subresources,
// shared ResourceClaims, and the scenarios of Grove's own e2e suite (gang
// scheduling, gang termination, scaling, startup ordering), with the real
// operator binary against a real control plane: the kube-scheduler places
// every pod and kube-controller-manager's HPA controller scales.
package inference_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"

	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestInference(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Inference Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "inference", NVIDIADRA: true, WithOperator: true, Operator: framework.OperatorOptions{
		Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			// The rollout specs kill the operator mid-rollout; a short
			// lease lets its successor take over in seconds.
			framework.ShortLeases(cfg)
		},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
