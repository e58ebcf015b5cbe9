package trainjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
