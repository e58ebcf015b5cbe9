// Package certificates_test checks the operator's self-managed webhook
// serving certificate end to end (webhookServer.certificates.mode
// SelfManaged, the Helm chart's default): the suite's operator starts
// against webhook configurations installed without caBundle, provisions its
// certificate in a Secret, injects the CA, and keeps both current. It is a
// suite of its own because the other suites' operators serve a certificate
// the framework writes (mode Provided).
package certificates_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const suiteName = "certificates"

var env *framework.Env

func TestCertificates(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook Certificates Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// Admission needs no nodes; a small topology starts faster.
	topology := cluster.DefaultTopology()
	topology.BlocksPerZone, topology.RacksPerBlock, topology.NodesPerRack = 1, 1, 1
	var err error
	env, err = framework.Setup(ctx, framework.Options{
		Name:         suiteName,
		Topology:     &topology,
		WithOperator: true,
		Operator:     framework.OperatorOptions{SelfManagedCertificates: true},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
