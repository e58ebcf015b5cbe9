package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// crdAPI serves Trainer's custom resources the way a kube-apiserver does
// once Trainer's CRDs are installed: the request body is pruned of unknown
// fields and defaulted from the CRD's schema, admission webhooks run, and
// the object is validated against the schema (OpenAPI and CEL rules) by
// apiextensions-apiserver's own strategy.
type crdAPI struct {
	kinds map[schema.GroupVersionKind]*crdKind
}

// crdKind is one served version of one CRD.
type crdKind struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	structural *structuralschema.Structural
	strategy   rest.RESTCreateStrategy
}

// loadCRDs reads every CustomResourceDefinition in the YAML files of dir.
func loadCRDs(dir string) (*crdAPI, error) {
	docs, err := crdDocuments(dir)
	if err != nil {
		return nil, err
	}
	api := &crdAPI{kinds: map[schema.GroupVersionKind]*crdKind{}}
	for _, doc := range docs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(doc, &crd); err != nil {
			return nil, fmt.Errorf("decode a CRD of %s: %w", dir, err)
		}
		if err := api.add(&crd); err != nil {
			return nil, err
		}
	}
	return api, nil
}

// add prepares each served version of crd as the apiextensions-apiserver
// does when it starts serving it.
func (api *crdAPI) add(crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.Spec.PreserveUnknownFields {
		return fmt.Errorf("CRD %s preserves unknown fields, which the oracle does not emulate", crd.Name)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return fmt.Errorf("CRD %s version %s: convert schema: %w", crd.Name, v.Name, err)
		}
		structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("CRD %s version %s: schema is not structural: %w", crd.Name, v.Name, err)
		}
		// As the server does: defaults that would not survive pruning are
		// dropped from the schema.
		structural = structural.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(structural); err != nil {
			return fmt.Errorf("CRD %s version %s: prune defaults: %w", crd.Name, v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("CRD %s version %s: schema validator: %w", crd.Name, v.Name, err)
		}
		var status *apiextensions.CustomResourceSubresourceStatus
		if v.Subresources != nil && v.Subresources.Status != nil {
			status = &apiextensions.CustomResourceSubresourceStatus{}
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		api.kinds[gvk] = &crdKind{
			gvk:        gvk,
			namespaced: namespaced,
			structural: structural,
			// The status validator only serves updates of /status.
			strategy: customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(), namespaced, gvk,
				validator, nil, structural, status, nil, v.SelectableFields),
		}
	}
	return nil
}

// kind returns the served kind of obj, or an error naming what is served.
func (api *crdAPI) kind(obj *unstructured.Unstructured) (*crdKind, error) {
	gvk := obj.GroupVersionKind()
	if k, ok := api.kinds[gvk]; ok {
		return k, nil
	}
	var served []string
	for gvk := range api.kinds {
		served = append(served, gvk.GroupVersion().String()+" "+gvk.Kind)
	}
	return nil, fmt.Errorf("apiVersion %q kind %q is not served by Trainer's CRDs (served: %v)", obj.GetAPIVersion(), obj.GetKind(), served)
}

// admission is what the admission webhooks do to an object being created:
// mutate changes it (the mutating webhook), validate accepts or refuses it
// (the validating webhook). Either may be nil.
type admission struct {
	mutate   func(obj *unstructured.Unstructured) error
	validate func(ctx context.Context, obj *unstructured.Unstructured) (warnings []string, err error)
}

// create handles a create request for obj as the kube-apiserver does and
// returns the object as it would be stored, with the warnings the server
// would send back (unknown fields dropped, webhook warnings).
//
// Unlike a real server, a metadata.uid or metadata.creationTimestamp already
// set on obj is kept, so that callers can reproduce the owner references of
// a TrainJob they created elsewhere; when absent, they are filled as the
// server fills them (a random UID, the current time).
func (k *crdKind) create(ctx context.Context, obj *unstructured.Unstructured, adm admission) (*unstructured.Unstructured, []string, error) {
	obj = obj.DeepCopy()
	warnings, err := k.decode(obj)
	if err != nil {
		return nil, nil, err
	}
	if adm.mutate != nil {
		if err := adm.mutate(obj); err != nil {
			return nil, warnings, fmt.Errorf("mutating webhook: %w", err)
		}
		// A webhook's patch goes through pruning and defaulting again.
		if _, err := k.decode(obj); err != nil {
			return nil, warnings, err
		}
	}

	uid, created := obj.GetUID(), obj.GetCreationTimestamp()
	rest.FillObjectMetaSystemFields(obj)
	if uid != "" {
		obj.SetUID(uid)
	}
	if !created.IsZero() {
		obj.SetCreationTimestamp(created)
	}
	requestNamespace := metav1.NamespaceNone
	if k.namespaced {
		requestNamespace = obj.GetNamespace()
		if requestNamespace == "" {
			requestNamespace = metav1.NamespaceDefault
		}
	}
	// BeforeCreate sets the namespace from the request's, clears status
	// (the CRDs have a status subresource), sets generation 1 and runs the
	// CRD's schema and CEL validation.
	if err := rest.BeforeCreate(k.strategy, genericapirequest.WithNamespace(ctx, requestNamespace), obj); err != nil {
		return nil, warnings, err
	}
	if adm.validate != nil {
		w, err := adm.validate(ctx, obj)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, fmt.Errorf("admission webhook denied the request: %w", err)
		}
	}
	return obj, warnings, nil
}

// decode is what the server's codec does to a custom resource it reads:
// unknown fields are pruned (and reported, as with fieldValidation=Warn),
// embedded metadata is coerced, and schema defaults are applied.
func (k *crdKind) decode(obj *unstructured.Unstructured) ([]string, error) {
	meta, found, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj.Object,
		schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	apiVersion, kind := obj.GetAPIVersion(), obj.GetKind()
	unknown := append([]string(nil), metaUnknown...)
	unknown = append(unknown, structuralpruning.PruneWithOptions(obj.Object, k.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, k.structural)
	fieldErr, coerceUnknown := schemaobjectmeta.CoerceWithOptions(nil, obj.Object, k.structural, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if fieldErr != nil {
		return nil, fieldErr
	}
	unknown = append(unknown, coerceUnknown...)
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(obj.Object, meta); err != nil {
			return nil, err
		}
	}
	structuraldefaulting.Default(obj.Object, k.structural)

	var warnings []string
	for _, path := range unknown {
		warnings = append(warnings, fmt.Sprintf("unknown field %q", path))
	}
	return warnings, nil
}
