package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
)

const (
	// schedulerPluginsModule is the scheduler-plugins module, at the version
	// Kubeflow Trainer (the trainer-oracle tools module) builds against.
	schedulerPluginsModule = "sigs.k8s.io/scheduler-plugins"
	// coschedulingPodGroupCRDPath is its PodGroup CRD
	// (podgroups.scheduling.x-k8s.io) inside that module.
	coschedulingPodGroupCRDPath = "config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
)

// InstallCoschedulingPodGroupCRD installs the scheduler-plugins PodGroup CRD
// (scheduling.x-k8s.io/v1alpha1), the one Kubeflow Trainer's coscheduling
// plugin writes, from the scheduler-plugins module the trainer-oracle tools
// module requires, and waits until it is served. No coscheduling scheduler
// runs: the kube-scheduler places the pods, and the PodGroup is what such a
// scheduler would read.
func InstallCoschedulingPodGroupCRD(ctx context.Context, c client.Client) error {
	tool, err := cluster.FindTool(cluster.ToolTrainerOracle)
	if err != nil {
		return err
	}
	dir, err := tool.DependencySource(ctx, schedulerPluginsModule)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, coschedulingPodGroupCRDPath))
	if err != nil {
		return fmt.Errorf("read the scheduler-plugins PodGroup CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("decode the scheduler-plugins PodGroup CRD: %w", err)
	}
	if err := createOrReplaceCRD(ctx, c, crd); err != nil {
		return err
	}
	return waitEstablished(ctx, c, crd.Name)
}
