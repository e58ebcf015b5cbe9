// Package realnode_test checks, on a real kubelet running real containers
// (e2e/cluster/realnode.go), the mechanisms of copse that are the kubelet's
// half of a contract and that the kwok nodes of every other suite only
// simulate: exit codes, reasons and finish times as the kubelet writes them,
// the startup gate's downward-API file refreshed by the kubelet, termination
// grace when a restart deletes pods, and init containers.
package realnode_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "realnode", WithOperator: true, RealNodes: 1}, nil)

func TestRealNode(t *testing.T) { framework.RunSuite(t, "Real Node Suite") }
