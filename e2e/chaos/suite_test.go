package chaos_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	env, err = framework.Setup(ctx, framework.Options{Name: "chaos", WithOperator: true, Operator: framework.OperatorOptions{
		// The harness kills the operator many times; a short lease lets
		// each successor lead within seconds instead of Kubernetes' 15.
		Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.LeaderElection.LeaseDuration = metav1.Duration{Duration: 4 * time.Second}
			cfg.LeaderElection.RenewDeadline = metav1.Duration{Duration: 3 * time.Second}
			cfg.LeaderElection.RetryPeriod = metav1.Duration{Duration: 500 * time.Millisecond}
		},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
