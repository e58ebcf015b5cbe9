package main

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// trimDescriptions drops the descriptions nested deeper than depth levels of
// properties in every CRD of dir.
//
// Why: a CRD that embeds Kubernetes' pod and Job templates (Kubeflow
// Trainer's runtimes embed a whole JobSet spec) carries the Kubernetes API
// reference for every field of them, three quarters of its size. Rendered
// from a Helm template, a CRD is stored twice in the release Secret, whose
// data may not exceed 1 MiB. The deep fields are Kubernetes' own and
// documented by `kubectl explain pod.spec` and `kubectl explain job.spec`.
func trimDescriptions(dir string, depth int) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("decode %s: %w", file, err)
		}
		for i := range crd.Spec.Versions {
			if schema := crd.Spec.Versions[i].Schema; schema != nil && schema.OpenAPIV3Schema != nil {
				trim(schema.OpenAPIV3Schema, 0, depth)
			}
		}
		out, err := yaml.Marshal(crd)
		if err != nil {
			return fmt.Errorf("encode %s: %w", file, err)
		}
		if err := os.WriteFile(file, append([]byte("---\n"), out...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func trim(s *apiextensionsv1.JSONSchemaProps, level, depth int) {
	if level > depth {
		s.Description = ""
	}
	for name, p := range s.Properties {
		trim(&p, level+1, depth)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		trim(s.Items.Schema, level+1, depth)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		trim(s.AdditionalProperties.Schema, level+1, depth)
	}
}
