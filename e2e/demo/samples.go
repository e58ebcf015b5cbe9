package main

import (
	"bytes"
	"context"
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

// applySamples server-side applies every object of every YAML file in dir
// into namespace, and returns the names of the PodCliqueSets applied.
func applySamples(ctx context.Context, c client.Client, dir, namespace string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list samples in %s: %w", dir, err)
	}
	sort.Strings(files)
	var names []string
	for _, file := range files {
		objects, err := readObjects(file)
		if err != nil {
			return nil, err
		}
		for _, obj := range objects {
			obj.SetNamespace(namespace)
			if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
				return nil, fmt.Errorf("apply %s %s from %s: %w", obj.GetKind(), obj.GetName(), filepath.Base(file), err)
			}
			if obj.GetKind() == "PodCliqueSet" {
				names = append(names, obj.GetName())
			}
		}
	}
	return names, nil
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
		if err == io.EOF {
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
