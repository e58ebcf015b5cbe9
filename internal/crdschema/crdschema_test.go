package crdschema

import (
	"maps"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestPathTypes(t *testing.T) {
	schema := &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {XIntOrString: true}},
				}}},
				"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				"raw":    {XPreserveUnknownFields: ptr.To(true)},
				"kept":   {Type: "object", XPreserveUnknownFields: ptr.To(true)},
			}},
		},
	}
	want := map[string]string{
		"":                   "object",
		".spec":              "object",
		".spec.ports":        "array",
		".spec.ports[]":      "object",
		".spec.ports[].port": "int-or-string",
		".spec.labels":       "object",
		".spec.labels{}":     "string",
		".spec.raw":          "any",
		".spec.kept":         "object",
	}
	if got := PathTypes(schema); !maps.Equal(got, want) {
		t.Errorf("PathTypes = %v, want %v", got, want)
	}
}

func TestVersion(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1"}, {Name: "v1"}},
	}}
	if v := Version(crd, "v1"); v != &crd.Spec.Versions[1] {
		t.Errorf("Version(v1) = %v", v)
	}
	if v := Version(crd, "v2"); v != nil {
		t.Errorf("Version(v2) = %v, want nil", v)
	}
}

func TestCompare(t *testing.T) {
	upstream := map[string]string{"": "object", ".b": "string", ".a": "integer", ".c": "array", ".d": "int-or-string"}
	copse := map[string]string{"": "object", ".b": "string", ".d": "string", ".extra": "boolean"}
	missing, retyped := Compare(upstream, copse)
	if want := []string{".a", ".c"}; !slices.Equal(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	if want := []string{".d: upstream int-or-string, copse string"}; !slices.Equal(retyped, want) {
		t.Errorf("retyped %v, want %v", retyped, want)
	}
}
