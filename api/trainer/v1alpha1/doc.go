// Package v1alpha1 holds copse's trainer.kubeflow.org/v1alpha1 API: TrainJob,
// TrainingRuntime and ClusterTrainingRuntime.
//
// The types are a JSON-compatible superset of Kubeflow Trainer v2.3.0's API
// (github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1): every TrainJob
// and runtime written for Kubeflow Trainer decodes and applies unchanged.
// Trainer's package does not build against copse's Kubernetes libraries, so
// the types are copse's own, field for field; copse adds
//
//   - TrainingRuntimeSpec.ttlSecondsAfterFinished (KEP-2899),
//   - PodGroupPolicy.workload, gang scheduling on the Kubernetes Workload API
//     (KEP-3015),
//   - TrainJobStatus.numNodes, the resolved trainer node count the NODES
//     printer column shows.
//
// The specs in e2e/trainerparity/compat_test.go hold the superset in place,
// against Trainer's own types and CRDs run in the pinned tool trainer-oracle:
// Trainer's objects with every field set decode strictly into these types
// and encode unchanged, and every property path of Trainer's CRD schemas is
// in copse's CRDs with the same type.
//
// +kubebuilder:object:generate=true
// +groupName=trainer.kubeflow.org
package v1alpha1
