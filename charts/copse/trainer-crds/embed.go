// Package trainercrds embeds copse's generated trainer.kubeflow.org
// CustomResourceDefinitions (TrainJob, TrainingRuntime,
// ClusterTrainingRuntime).
//
// They live outside the chart's crds/ folder, which Helm always installs, so
// that the chart can leave them out on clusters that run Kubeflow Trainer
// itself (value trainJob.installCRDs). `make generate` writes the YAML files
// beside this one.
package trainercrds

import (
	"embed"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/copse-dev/copse/charts/copse/crds"
)

//go:embed *.yaml
var files embed.FS

// All returns copse's trainer.kubeflow.org CRDs, ordered by file name.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crds.Decode(files)
}
