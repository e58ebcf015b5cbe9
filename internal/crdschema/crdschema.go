// Package crdschema reads CustomResourceDefinition schemas as plain values,
// for the tests that prove copse's CRDs accept every manifest an upstream
// project's CRDs accept.
package crdschema

import (
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// PathTypes maps every property path in a schema to its type. Array items
// are written as "[]" and map values as "{}", so ".spec.template.cliques[].name".
// An int-or-string field has no type of its own and is recorded as
// "int-or-string"; an unrestricted field as "any".
func PathTypes(root *apiextensionsv1.JSONSchemaProps) map[string]string {
	out := map[string]string{}
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		switch {
		case s.XIntOrString:
			out[path] = "int-or-string"
		case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && s.Type == "":
			out[path] = "any"
		default:
			out[path] = s.Type
		}
		for name, prop := range s.Properties {
			walk(path+"."+name, &prop)
		}
		if s.Items != nil {
			walk(path+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(path+"{}", s.AdditionalProperties.Schema)
		}
	}
	walk("", root)
	return out
}

// Version returns the version of crd called name, or nil.
func Version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// Compare returns the paths of upstream that copse lacks, and those copse
// types differently, written "path: upstream T, copse U", both sorted.
// Paths only copse has are not reported: copse's schema may be a superset.
func Compare(upstream, copse map[string]string) (missing, retyped []string) {
	for path, upstreamType := range upstream {
		copseType, ok := copse[path]
		switch {
		case !ok:
			missing = append(missing, path)
		case copseType != upstreamType:
			retyped = append(retyped, path+": upstream "+upstreamType+", copse "+copseType)
		}
	}
	sort.Strings(missing)
	sort.Strings(retyped)
	return missing, retyped
}
