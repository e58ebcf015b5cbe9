// Package reliability_test checks how copse behaves at its limits and when
// parts of the system fail, with the real operator binary against a real
// control plane: oversized workloads refused with the field to change, the
// operator's webhooks down, the API server restarted under the operator.
package reliability_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "reliability", WithOperator: true, Operator: framework.OperatorOptions{
	// The API server restart specs need an outage shorter than the
	// Lease's renewDeadline and one longer. A restart takes 5 to 10
	// seconds on a loaded 2-core machine, as long as the default
	// renewDeadline (10s): twice the defaults leave a clear margin.
	Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.LeaderElection.LeaseDuration = metav1.Duration{Duration: 30 * time.Second}
		cfg.LeaderElection.RenewDeadline = metav1.Duration{Duration: 20 * time.Second}
	},
}}, nil)

func TestReliability(t *testing.T) { framework.RunSuite(t, "Reliability Suite") }
