// Package certificates_test checks the operator's self-managed webhook
// serving certificate end to end (webhookServer.certificates.mode
// SelfManaged, the Helm chart's default): the suite's operator starts
// against webhook configurations installed without caBundle, provisions its
// certificate in a Secret, injects the CA, and keeps both current. It is a
// suite of its own because the other suites' operators serve a certificate
// the framework writes (mode Provided).
package certificates_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const suiteName = "certificates"

var env = framework.SetupSuite(framework.Options{
	Name:         suiteName,
	Topology:     oneNode(),
	WithOperator: true,
	Operator:     framework.OperatorOptions{SelfManagedCertificates: true},
}, nil)

func TestCertificates(t *testing.T) { framework.RunSuite(t, "Webhook Certificates Suite") }

// oneNode is enough: admission needs no nodes, and a small topology starts
// faster.
func oneNode() *cluster.Topology {
	topology := cluster.DefaultTopology()
	topology.BlocksPerZone, topology.RacksPerBlock, topology.NodesPerRack = 1, 1, 1
	return &topology
}
