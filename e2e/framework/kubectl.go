package framework

import (
	"context"
	"fmt"
	"os/exec"
)

// Kubectl runs the cluster's kubectl (the version the cluster was built
// with) against the suite's cluster and returns what it printed, so specs
// can check what a user sees, such as printer columns.
func (e *Env) Kubectl(ctx context.Context, args ...string) (string, error) {
	all := append([]string{"--kubeconfig", e.Cluster.Kubeconfig()}, args...)
	out, err := exec.CommandContext(ctx, e.Cluster.Binaries().Kubectl, all...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}
