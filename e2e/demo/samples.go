package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldManager names the demo in managedFields.
const fieldManager = "copse-demo"

// The kinds the demo follows or orders.
const (
	kindPodCliqueSet           = "PodCliqueSet"
	kindTrainJob               = "TrainJob"
	kindClusterTrainingRuntime = "ClusterTrainingRuntime"
	kindTrainingRuntime        = "TrainingRuntime"
)

// sampleObject is one object of a sample file.
type sampleObject struct {
	file string // base name of the sample file
	obj  *unstructured.Unstructured
}

// appliedObject names an object the demo applied and the sample it came from.
type appliedObject struct {
	file, kind, name string
}

// applySamples server-side applies every object of every YAML file in dir,
// namespaced ones into namespace, in applyOrder, and returns what it applied
// in that order.
func applySamples(ctx context.Context, c client.Client, dir, namespace string) ([]appliedObject, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list samples in %s: %w", dir, err)
	}
	var objects []sampleObject
	for _, file := range files {
		read, err := readObjects(file)
		if err != nil {
			return nil, err
		}
		for _, obj := range read {
			objects = append(objects, sampleObject{file: filepath.Base(file), obj: obj})
		}
	}
	var applied []appliedObject
	for _, s := range applyOrder(objects) {
		namespaced, err := c.IsObjectNamespaced(s.obj)
		if err != nil {
			return nil, fmt.Errorf("%s %s from %s: %w", s.obj.GetKind(), s.obj.GetName(), s.file, err)
		}
		if namespaced {
			s.obj.SetNamespace(namespace)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(s.obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("apply %s %s from %s: %w", s.obj.GetKind(), s.obj.GetName(), s.file, err)
		}
		applied = append(applied, appliedObject{file: s.file, kind: s.obj.GetKind(), name: s.obj.GetName()})
	}
	return applied, nil
}

// applyOrder sorts the objects by file name, and puts the training runtimes
// before everything else: copse refuses a TrainJob whose runtime does not
// exist yet, whichever file either is in.
func applyOrder(objects []sampleObject) []sampleObject {
	out := append([]sampleObject(nil), objects...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := isRuntime(out[i].obj.GetKind()), isRuntime(out[j].obj.GetKind())
		if ri != rj {
			return ri
		}
		return out[i].file < out[j].file
	})
	return out
}

func isRuntime(kind string) bool {
	return kind == kindClusterTrainingRuntime || kind == kindTrainingRuntime
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read sample: %w", err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}
