package trainjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func TestRuntimeSnapshotRoundTrip(t *testing.T) {
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "uid-1"},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "rt", Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)}}}
	runtime := runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](3), Torch: &trainerv1alpha1.TorchMLPolicySource{}},
		replicatedJob("node", AncestorTrainer, NodeName))
	runtime.Kind = trainerv1alpha1.TrainingRuntimeKind
	runtime.Spec.TTLSecondsAfterFinished = ptr.To[int32](30)

	cm, err := BuildRuntimeSnapshot(tj, runtime)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != "tj-runtime-snapshot" || !metav1.IsControlledBy(cm, tj) {
		t.Fatalf("snapshot %s owners %v", cm.Name, cm.OwnerReferences)
	}
	back, err := RuntimeFromSnapshot(tj, cm)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(runtime, back); diff != "" {
		t.Errorf("runtime changed through its snapshot (-before +after):\n%s", diff)
	}

	other := tj.DeepCopy()
	other.UID = "uid-2"
	if _, err := RuntimeFromSnapshot(other, cm); err == nil || !strings.Contains(err.Error(), "not controlled") {
		t.Errorf("a snapshot of another TrainJob (same name, new UID) was accepted: %v", err)
	}
	renamed := tj.DeepCopy()
	renamed.Spec.RuntimeRef.Name = "another"
	if _, err := RuntimeFromSnapshot(renamed, cm); err == nil {
		t.Error("a snapshot of another runtime was accepted")
	}
}

// kubeflowSnapshot is a runtime snapshot as Kubeflow Trainer v2.3.0 writes
// it (pkg/runtime/core/snapshot.go): the YAML of the whole runtime object as
// its cached client read it (type, metadata with UID, resourceVersion,
// finalizers and managed fields, spec, in Trainer's API, which has no
// ttlSecondsAfterFinished), in a ConfigMap without labels, applied with the
// TrainJob as controller.
func kubeflowSnapshot(tj *trainerv1alpha1.TrainJob) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: tj.Name + RuntimeSnapshotSuffix, Namespace: tj.Namespace, UID: "cm-uid",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob",
				Name: tj.Name, UID: tj.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Data: map[string]string{RuntimeSnapshotKey: `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  creationTimestamp: "2026-11-27T10:00:00Z"
  finalizers:
  - trainer.kubeflow.org/resource-in-use
  generation: 1
  labels:
    trainer.kubeflow.org/framework: torch
  managedFields:
  - apiVersion: trainer.kubeflow.org/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec: {}
    manager: kubectl
    operation: Update
    time: "2026-11-27T10:00:00Z"
  name: torch-distributed
  resourceVersion: "4711"
  uid: 7d1f0c2e-0000-4000-8000-000000000001
spec:
  mlPolicy:
    numNodes: 1
    torch:
      numProcPerNode: auto
  template:
    spec:
      replicatedJobs:
      - name: node
        replicas: 1
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - command:
                  - torchrun
                  image: pytorch/pytorch:2.7.1
                  name: node
`},
	}
}

func TestAdoptKubeflowSnapshot(t *testing.T) {
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "uid-1"},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "torch-distributed",
			Kind: ptr.To(trainerv1alpha1.ClusterTrainingRuntimeKind)}}}
	snapshot := kubeflowSnapshot(tj)
	if IsCopseSnapshot(snapshot) {
		t.Fatal("Kubeflow's snapshot counts as copse's")
	}
	runtime, err := RuntimeFromSnapshot(tj, snapshot)
	if err != nil {
		t.Fatalf("copse cannot read Kubeflow's snapshot: %v", err)
	}
	if runtime.Kind != trainerv1alpha1.ClusterTrainingRuntimeKind || runtime.Name != "torch-distributed" ||
		len(runtime.Spec.Template.Spec.ReplicatedJobs) != 1 || runtime.Spec.MLPolicy.Torch == nil {
		t.Fatalf("Kubeflow's snapshot read as %+v", runtime)
	}

	cases := []struct {
		name    string
		inSpec  *int32 // the snapshot's own TTL
		live    *int32 // the live runtime's
		wantTTL *int32
	}{
		{"Trainer's snapshot has no TTL: the live runtime's is frozen", nil, ptr.To[int32](60), ptr.To[int32](60)},
		{"no TTL anywhere: none", nil, nil, nil},
		{"a snapshot with a TTL keeps it", ptr.To[int32](30), ptr.To[int32](60), ptr.To[int32](30)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtime
			rt.Spec = *runtime.Spec.DeepCopy()
			rt.Spec.TTLSecondsAfterFinished = tc.inSpec
			adopted, err := AdoptRuntimeSnapshot(tj, snapshot, rt, tc.live)
			if err != nil {
				t.Fatal(err)
			}
			if !IsCopseSnapshot(adopted) || adopted.Labels[TrainJobNameLabel] != tj.Name {
				t.Errorf("adopted snapshot labels %v: not copse's", adopted.Labels)
			}
			if adopted.Name != snapshot.Name || adopted.UID != snapshot.UID || !metav1.IsControlledBy(adopted, tj) {
				t.Errorf("adopted snapshot is another object: %s %s owners %v", adopted.Name, adopted.UID, adopted.OwnerReferences)
			}
			if IsCopseSnapshot(snapshot) || snapshot.Data[RuntimeSnapshotKey] == adopted.Data[RuntimeSnapshotKey] {
				t.Error("the snapshot read was changed, or its data kept Kubeflow's layout")
			}
			back, err := RuntimeFromSnapshot(tj, adopted)
			if err != nil {
				t.Fatalf("the adopted snapshot does not read back: %v", err)
			}
			want := rt
			want.Spec = *rt.Spec.DeepCopy()
			want.Spec.TTLSecondsAfterFinished = tc.wantTTL
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("adopted snapshot holds another runtime (-want +got):\n%s", diff)
			}
		})
	}
}
