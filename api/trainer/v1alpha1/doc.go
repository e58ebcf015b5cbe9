// Package v1alpha1 holds copse's trainer.kubeflow.org/v1alpha1 API: TrainJob,
// TrainingRuntime and ClusterTrainingRuntime.
//
// The types are a JSON-compatible superset of Kubeflow Trainer v2.3.0's API
// (github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1): every TrainJob
// and runtime written for Kubeflow Trainer decodes and applies unchanged.
// Trainer's structs are embedded inline wherever copse adds nothing, so the
// superset cannot drift field by field; copse adds
//
//   - TrainingRuntimeSpec.ttlSecondsAfterFinished (KEP-2899),
//   - PodGroupPolicy.workload, gang scheduling on the Kubernetes Workload API
//     (KEP-3015),
//   - TrainJobStatus.numNodes, the resolved trainer node count the NODES
//     printer column shows.
//
// The compatibility tests in this package prove both directions.
//
// +kubebuilder:object:generate=true
// +groupName=trainer.kubeflow.org
package v1alpha1
