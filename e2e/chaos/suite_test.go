package chaos_test

import (
	"testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

// The harness mixes every feature: TrainJobs on the real JobSet controller,
// queues in the real Kueue, topology packing.
var env = framework.SetupSuite(framework.Options{Name: "chaos", WithOperator: true, WithJobSet: true, WithKueue: true,
	Operator: framework.OperatorOptions{Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.Kueue.Enabled = true
		cfg.TopologyAwareScheduling.Enabled = true
		// The harness kills the operator many times: each successor
		// must lead within seconds.
		framework.ShortLeases(cfg)
	}}}, nil)

func TestChaos(t *testing.T) { framework.RunSuite(t, "Chaos Suite") }
