// Package webhook_test checks copse's admission webhooks end to end: objects
// are sent through a real API server, which calls the operator's webhook
// server on 127.0.0.1. The specs assert only what admission decides, so they
// hold whether or not the operator's controllers reconcile the objects.
package webhook_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "webhook", Topology: admissionTopology(), WithOperator: true}, nil)

func TestWebhook(t *testing.T) { framework.RunSuite(t, "Webhook Suite") }

// admissionTopology is one node: admission needs none, and a small topology
// starts faster.
func admissionTopology() *cluster.Topology {
	topology := cluster.DefaultTopology()
	topology.BlocksPerZone, topology.RacksPerBlock, topology.NodesPerRack = 1, 1, 1
	return &topology
}
