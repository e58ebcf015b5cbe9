// Package helm_test installs charts/copse with the pinned helm into a local
// cluster and proves it end to end: the chart is installed in local mode
// (pods on simulated nodes run no containers), and the operator binary runs
// as a local process with the identity of the chart's ServiceAccount (a
// TokenRequest token) and the configuration the chart rendered into its
// ConfigMap. Every API request the operator makes is therefore authorized by
// the chart's RBAC alone, and a missing permission fails a spec.
package helm_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

var (
	helm *framework.Helm
	env  = framework.SetupSuite(framework.Options{Name: "helm", Topology: twoNodes()}, func(ctx context.Context, env *framework.Env) {
		var err error
		helm, err = framework.NewHelm(ctx, env.Cluster.Kubeconfig(), filepath.Join(env.Cluster.Dir(), "helm"))
		Expect(err).NotTo(HaveOccurred())
	})
)

func TestHelm(t *testing.T) { framework.RunSuite(t, "Helm Suite") }

// twoNodes is plenty: the workloads ask for no GPUs.
func twoNodes() *cluster.Topology {
	topology := cluster.DefaultTopology()
	topology.BlocksPerZone, topology.RacksPerBlock, topology.NodesPerRack = 1, 1, 2
	return &topology
}
