package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(kind, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetKind(kind)
	obj.SetName(name)
	return obj
}

func TestApplyOrder(t *testing.T) {
	objects := []sampleObject{
		{file: "a-trainjob.yaml", obj: object(kindTrainJob, "early")},
		{file: "inference.yaml", obj: object(kindPodCliqueSet, "serve")},
		{file: "z-runtime.yaml", obj: object(kindClusterTrainingRuntime, "torch")},
		{file: "a-trainjob.yaml", obj: object(kindTrainingRuntime, "local")},
		{file: "a-trainjob.yaml", obj: object(kindTrainJob, "late")},
	}
	got := applyOrder(objects)
	var names []string
	for _, s := range got {
		names = append(names, s.obj.GetName())
	}
	// Runtimes first (by file, then as written), then everything else by
	// file, each file's objects in the order they are written.
	want := []string{"local", "torch", "early", "late", "serve"}
	if len(names) != len(want) {
		t.Fatalf("applyOrder = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("applyOrder = %v, want %v", names, want)
		}
	}
	if objects[0].obj.GetName() != "early" || objects[2].obj.GetName() != "torch" {
		t.Errorf("applyOrder reordered its input")
	}
}
