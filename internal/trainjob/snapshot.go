package trainjob

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// RuntimeInUseFinalizer keeps a runtime while a TrainJob that has not
// finished references it (KEP-2899).
const RuntimeInUseFinalizer = "trainer.kubeflow.org/resource-in-use"

// snapshotObject is what a runtime snapshot holds: the runtime's kind, name
// and spec, in the shape of the runtime object itself.
type snapshotObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              trainerv1alpha1.TrainingRuntimeSpec `json:"spec"`
}

// BuildRuntimeSnapshot freezes the runtime a TrainJob starts with into a
// ConfigMap owned by the TrainJob (Kubeflow Trainer's name and key), so that
// later edits of the runtime, or its deletion, do not change the TrainJob.
func BuildRuntimeSnapshot(trainJob *trainerv1alpha1.TrainJob, runtime Runtime) (*corev1.ConfigMap, error) {
	raw, err := yaml.Marshal(snapshotObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainerv1alpha1.SchemeGroupVersion.String(), Kind: runtime.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: runtime.Name},
		Spec:       runtime.Spec,
	})
	if err != nil {
		return nil, fmt.Errorf("encode the runtime snapshot: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: OwnedMeta(trainJob, trainJob.Name+RuntimeSnapshotSuffix),
		Data:       map[string]string{RuntimeSnapshotKey: string(raw)},
	}, nil
}

// RuntimeFromSnapshot reads a TrainJob's runtime snapshot back. A snapshot not
// controlled by this TrainJob, or of another runtime than its runtimeRef
// names, is refused: it was not made for it.
func RuntimeFromSnapshot(trainJob *trainerv1alpha1.TrainJob, snapshot *corev1.ConfigMap) (Runtime, error) {
	if owner := metav1.GetControllerOf(snapshot); owner == nil || owner.UID != trainJob.UID {
		return Runtime{}, fmt.Errorf("runtime snapshot %s is not controlled by this TrainJob", snapshot.Name)
	}
	raw, ok := snapshot.Data[RuntimeSnapshotKey]
	if !ok {
		return Runtime{}, fmt.Errorf("runtime snapshot %s has no %q key", snapshot.Name, RuntimeSnapshotKey)
	}
	obj := snapshotObject{}
	if err := yaml.Unmarshal([]byte(raw), &obj); err != nil {
		return Runtime{}, fmt.Errorf("decode runtime snapshot %s: %w", snapshot.Name, err)
	}
	if kind := RuntimeKind(trainJob); obj.Kind != kind || obj.Name != trainJob.Spec.RuntimeRef.Name {
		return Runtime{}, fmt.Errorf("runtime snapshot %s is of %s %s, but the TrainJob runs %s %s",
			snapshot.Name, obj.Kind, obj.Name, kind, trainJob.Spec.RuntimeRef.Name)
	}
	return Runtime{Kind: obj.Kind, Name: obj.Name, Spec: obj.Spec}, nil
}

// RuntimeKind is the kind a TrainJob's runtimeRef names, with the API's
// default.
func RuntimeKind(trainJob *trainerv1alpha1.TrainJob) string {
	if kind := trainJob.Spec.RuntimeRef.Kind; kind != nil && *kind != "" {
		return *kind
	}
	return trainerv1alpha1.ClusterTrainingRuntimeKind
}
