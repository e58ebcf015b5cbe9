package trainjob

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
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
	raw, err := encodeSnapshot(runtime)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: OwnedMeta(trainJob, trainJob.Name+RuntimeSnapshotSuffix),
		Data:       map[string]string{RuntimeSnapshotKey: raw},
	}, nil
}

func encodeSnapshot(runtime Runtime) (string, error) {
	raw, err := yaml.Marshal(snapshotObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainerv1alpha1.SchemeGroupVersion.String(), Kind: runtime.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: runtime.Name},
		Spec:       runtime.Spec,
	})
	if err != nil {
		return "", fmt.Errorf("encode the runtime snapshot: %w", err)
	}
	return string(raw), nil
}

// IsCopseSnapshot reports whether copse wrote (or already adopted) a runtime
// snapshot: it carries copse's labels, which also put it in the operator's
// cache. Kubeflow Trainer v2.3.0 writes its snapshots without them.
func IsCopseSnapshot(snapshot *corev1.ConfigMap) bool {
	return snapshot.Labels[labels.ManagedByKey] == labels.ManagedByValue
}

// AdoptRuntimeSnapshot turns a runtime snapshot another controller wrote for
// the TrainJob (Kubeflow Trainer v2.3.0 stores the whole runtime object as it
// read it, through an API without copse's fields) into copse's: a copy with
// copse's labels, its data rewritten in copse's layout (which Trainer reads
// too) from runtime, the snapshot as RuntimeFromSnapshot read it. Trainer's
// API has no ttlSecondsAfterFinished, so its snapshot never holds one: ttl,
// the live runtime's value when adopted (nil when the runtime is gone or sets
// none), is frozen in its place. Every other copse field (backend,
// podGroupPolicy.workload) stays as Trainer saw it: what exists was built
// without them. The owner reference is kept, and the ConfigMap is updated,
// never recreated.
func AdoptRuntimeSnapshot(trainJob *trainerv1alpha1.TrainJob, snapshot *corev1.ConfigMap, runtime Runtime, ttl *int32) (*corev1.ConfigMap, error) {
	if runtime.Spec.TTLSecondsAfterFinished == nil && ttl != nil {
		runtime.Spec = *runtime.Spec.DeepCopy()
		runtime.Spec.TTLSecondsAfterFinished = ptr.To(*ttl)
	}
	raw, err := encodeSnapshot(runtime)
	if err != nil {
		return nil, err
	}
	adopted := snapshot.DeepCopy()
	adopted.Labels = labels.Merge(adopted.Labels, ownedLabels(trainJob))
	adopted.Data = maps.Clone(adopted.Data)
	if adopted.Data == nil {
		adopted.Data = map[string]string{}
	}
	adopted.Data[RuntimeSnapshotKey] = raw
	return adopted, nil
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

// BackendOf is the backend a runtime builds its TrainJobs into: spec.backend,
// JobSet when unset. It is the one place the choice is made; the controller
// asks it of the TrainJob's runtime snapshot, so editing the runtime never
// moves a TrainJob already created.
func BackendOf(spec *trainerv1alpha1.TrainingRuntimeSpec) trainerv1alpha1.RuntimeBackend {
	if spec.Backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		return trainerv1alpha1.RuntimeBackendPodCliqueSet
	}
	return trainerv1alpha1.RuntimeBackendJobSet
}
