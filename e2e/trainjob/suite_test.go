// Package trainjob_test checks the TrainJob front-end end to end on the local
// cluster: the operator's TrainJob controller and webhooks, the real JobSet
// v0.12.0 controller with its own webhooks, the real kube-scheduler, and
// kwok nodes whose pods run and exit as their annotations say. The runtimes
// are the ClusterTrainingRuntimes Kubeflow Trainer v2.3.0 ships, read from
// Trainer's module by the trainer-oracle tool.
package trainjob_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

var (
	// shipped are Kubeflow Trainer v2.3.0's ClusterTrainingRuntimes by name.
	shipped map[string]*trainerv1alpha1.ClusterTrainingRuntime
	// The scheduler-plugins PodGroup CRD is served (runtimes with Kubeflow's
	// podGroupPolicy.coscheduling get their PodGroup); Volcano's is not.
	env = framework.SetupSuite(framework.Options{Name: "trainjob", WithOperator: true, WithJobSet: true, CoschedulingPodGroups: true,
		Operator: framework.OperatorOptions{
			// Crash specs kill the operator; a short lease lets its successor
			// take over in seconds.
			Configure: framework.ShortLeases,
		}}, func(ctx context.Context, env *framework.Env) {
		shipped = shippedRuntimes(ctx)
		for _, rt := range shipped {
			Expect(env.Client.Create(ctx, rt.DeepCopy())).To(Succeed(), "ClusterTrainingRuntime %s", rt.Name)
		}
	})
)

func TestTrainJob(t *testing.T) { framework.RunSuite(t, "TrainJob Suite") }

// shippedRuntimes reads the ClusterTrainingRuntimes Kubeflow Trainer v2.3.0
// installs, from its module, through trainer-oracle.
func shippedRuntimes(ctx context.Context) map[string]*trainerv1alpha1.ClusterTrainingRuntime {
	oracle, err := cluster.EnsureToolBinary(ctx, "trainer-oracle", GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.CommandContext(ctx, oracle, "runtimes")
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred())
	var list []*trainerv1alpha1.ClusterTrainingRuntime
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	Expect(dec.Decode(&list)).To(Succeed())
	out := map[string]*trainerv1alpha1.ClusterTrainingRuntime{}
	for _, rt := range list {
		out[rt.Name] = rt
	}
	return out
}
