package trainerparity_test

import (
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"

	trainercrds "github.com/copse-dev/copse/charts/copse/trainer-crds"
)

// copseSchemas are the structural schemas of copse's trainer.kubeflow.org
// CRDs by kind, what an API server serving copse's CRDs prunes and defaults
// with.
func copseSchemas() (map[string]*structuralschema.Structural, error) {
	crds, err := trainercrds.All()
	if err != nil {
		return nil, err
	}
	schemas := map[string]*structuralschema.Structural{}
	for _, crd := range crds {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("convert the schema of %s: %w", crd.Name, err)
		}
		structural, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("structural schema of %s: %w", crd.Name, err)
		}
		schemas[crd.Spec.Names.Kind] = structural
	}
	return schemas, nil
}

// admit prunes and defaults a raw object of kind with copse's CRD schema, as
// the API server does on create, and decodes it into out.
func admit(schemas map[string]*structuralschema.Structural, kind string, raw map[string]any, out any) error {
	schema, ok := schemas[kind]
	if !ok {
		return fmt.Errorf("copse serves no kind %s", kind)
	}
	obj, err := deepCopyJSON(raw)
	if err != nil {
		return err
	}
	structuralpruning.Prune(obj, schema, true)
	structuraldefaulting.Default(obj, schema)
	encoded, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(encoded, out)
}

func deepCopyJSON(in map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(raw, &out)
}
