// Package trainerparity proves that copse builds what Kubeflow Trainer
// v2.3.0 builds: for every ClusterTrainingRuntime Kubeflow ships and a table
// of TrainJobs against each, the JobSet, MPI Secret and hostfile and runtime
// snapshot copse makes equal, after normalising what is legitimately
// different (see normalize_test.go), what Kubeflow Trainer's own runtime framework
// makes for the same input. Kubeflow's side runs in the pinned tool
// trainer-oracle (hack/tools/trainer-oracle), a separate module because
// Trainer's dependencies do not build against copse's Kubernetes libraries.
//
// The same tool proves the API compatible (compat_test.go): Trainer's
// objects with every field set round-trip through copse's types, and every
// property path of Trainer's CRDs is in copse's.
//
// No cluster is needed: both sides default and validate their inputs as an
// API server does, from their own CRDs.
package trainerparity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/cluster"
)

func TestTrainerParity(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kubeflow Trainer Parity Suite")
}

// oracle is the path of the trainer-oracle binary.
var oracle string

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	oracle, err = cluster.EnsureToolBinary(ctx, "trainer-oracle", GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
})

// runOracle runs `trainer-oracle <command>` with input on stdin and decodes
// its JSON output into out.
func runOracle(ctx context.Context, out any, input any, command ...string) {
	cmd := exec.CommandContext(ctx, oracle, command...)
	cmd.Stderr = os.Stderr
	if input != nil {
		raw, err := json.Marshal(input)
		Expect(err).NotTo(HaveOccurred())
		cmd.Stdin = bytes.NewReader(raw)
	}
	raw, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "trainer-oracle %v", command)
	Expect(json.Unmarshal(raw, out)).To(Succeed())
}
