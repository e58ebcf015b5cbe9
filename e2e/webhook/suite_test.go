// Package webhook_test checks copse's admission webhooks end to end: objects
// are sent through a real API server, which calls the operator's webhook
// server on 127.0.0.1. The specs assert only what admission decides, so they
// hold whether or not the operator's controllers reconcile the objects.
package webhook_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

var env *framework.Env

func TestWebhook(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook Suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// Admission needs no nodes; a small topology starts faster.
	topology := cluster.DefaultTopology()
	topology.BlocksPerZone, topology.RacksPerBlock, topology.NodesPerRack = 1, 1, 1
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "webhook", Topology: &topology, WithOperator: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Teardown)
}, NodeTimeout(framework.SetupTimeout))

var _ = AfterEach(func() {
	Expect(env.CheckHealthy()).To(Succeed(), "a control-plane component or the operator crashed")
})
