// Package training_test checks GREP-0285's Training mode end to end: phases,
// the restart budget, the runtime limit, exit-code-aware pods, the webhook's
// Training rules, and crash safety of the operator, with the real operator
// binary against a real control plane.
package training_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "training", WithOperator: true, Operator: framework.OperatorOptions{
	Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
		// Crash specs kill the operator; a short lease lets its
		// successor take over in seconds rather than Kubernetes' default 15.
		framework.ShortLeases(cfg)
		cfg.Scheduler.IncompleteGangTimeout = metav1.Duration{Duration: incompleteGangTimeout}
		cfg.Scheduler.InPlaceRestartTimeout = metav1.Duration{Duration: inPlaceRestartTimeout}
	},
}}, nil)

func TestTraining(t *testing.T) { framework.RunSuite(t, "Training Suite") }
