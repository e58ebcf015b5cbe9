// Package withoutcomputedomains_test runs Grove's auto-MNNVL cases for a
// cluster that does not serve NVIDIA's ComputeDomain CRD (Grove's
// "unsupported" configurations), on a local control plane without the
// simulated NVIDIA DRA driver: MNNVL disabled, and an operator that refuses
// to start with it enabled. The configurations with the CRD are in
// e2e/placement.
package withoutcomputedomains_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "placement-without-computedomains", WithOperator: true}, nil)

func TestWithoutComputeDomains(t *testing.T) {
	framework.RunSuite(t, "Placement without ComputeDomains Suite")
}
