package v1alpha1_test

import (
	"slices"
	"strings"
	"testing"

	grovecrds "github.com/ai-dynamo/grove/operator/api/core/v1alpha1/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	copsecrds "github.com/copse-dev/copse/charts/copse/crds"
	"github.com/copse-dev/copse/internal/crdschema"
)

// removedFromKubernetes lists the Grove schema paths that copse deliberately
// lacks, by path suffix. Grove's CRDs were generated from k8s.io/api v0.35,
// whose PodSpec had the alpha field workloadRef; Kubernetes 1.36 replaced it
// with schedulingGroup, so no API server copse supports accepts it on a pod.
var removedFromKubernetes = []string{
	"podSpec.workloadRef",
	"podSpec.workloadRef.name",
	"podSpec.workloadRef.podGroup",
	"podSpec.workloadRef.podGroupReplicaKey",
}

func isRemovedFromKubernetes(path string) bool {
	for _, suffix := range removedFromKubernetes {
		if strings.HasSuffix(path, "."+suffix) {
			return true
		}
	}
	return false
}

// TestCopseCRDSchemasContainEveryGrovePath proves, at the level the API
// server validates, that a Grove manifest fits copse's CRDs: every property
// path of Grove's schema exists in copse's with the same type.
func TestCopseCRDSchemasContainEveryGrovePath(t *testing.T) {
	copseByKind := map[string]*apiextensionsv1.CustomResourceDefinition{}
	all, err := copsecrds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		copseByKind[crd.Spec.Names.Kind] = crd
	}

	for kind, groveYAML := range map[string]string{
		"PodCliqueSet":          grovecrds.PodCliqueSetCRD(),
		"PodClique":             grovecrds.PodCliqueCRD(),
		"PodCliqueScalingGroup": grovecrds.PodCliqueScalingGroupCRD(),
		// Grove's function keeps the kind's former name.
		"ClusterTopologyBinding": grovecrds.ClusterTopologyCRD(),
	} {
		t.Run(kind, func(t *testing.T) {
			grove := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal([]byte(groveYAML), grove); err != nil {
				t.Fatalf("decode Grove CRD: %v", err)
			}
			copse, ok := copseByKind[kind]
			if !ok {
				t.Fatalf("copse has no CRD for kind %s", kind)
			}
			if copse.Spec.Group != grove.Spec.Group || copse.Spec.Names.Plural != grove.Spec.Names.Plural || copse.Spec.Scope != grove.Spec.Scope {
				t.Fatalf("identity differs: copse %s/%s (%s), Grove %s/%s (%s)",
					copse.Spec.Group, copse.Spec.Names.Plural, copse.Spec.Scope, grove.Spec.Group, grove.Spec.Names.Plural, grove.Spec.Scope)
			}
			if strings.Join(copse.Spec.Names.ShortNames, ",") != strings.Join(grove.Spec.Names.ShortNames, ",") {
				t.Errorf("short names: copse %v, Grove %v", copse.Spec.Names.ShortNames, grove.Spec.Names.ShortNames)
			}
			for _, gv := range grove.Spec.Versions {
				cv := crdschema.Version(copse, gv.Name)
				if cv == nil {
					t.Fatalf("copse CRD lacks version %s", gv.Name)
				}
				assertSubresourcesMatch(t, gv.Subresources, cv.Subresources)
				groveTypes := crdschema.PathTypes(gv.Schema.OpenAPIV3Schema)
				copseTypes := crdschema.PathTypes(cv.Schema.OpenAPIV3Schema)
				if len(groveTypes) < 30 {
					t.Fatalf("only %d paths in Grove's %s schema; the walk is broken", len(groveTypes), kind)
				}
				missing, retyped := crdschema.Compare(groveTypes, copseTypes)
				var excepted []string
				missing = slices.DeleteFunc(missing, func(path string) bool {
					if isRemovedFromKubernetes(path) {
						excepted = append(excepted, path)
						return true
					}
					return false
				})
				for path := range copseTypes {
					if _, inGrove := groveTypes[path]; inGrove && isRemovedFromKubernetes(path) {
						t.Errorf("%s is listed as removed from Kubernetes but copse has it; drop it from removedFromKubernetes", path)
					}
				}
				if len(missing) > 0 {
					t.Errorf("%d Grove paths missing from copse's %s schema, e.g. %v", len(missing), kind, head(missing, 10))
				}
				if len(retyped) > 0 {
					t.Errorf("%d paths typed differently in copse's %s schema, e.g. %v", len(retyped), kind, head(retyped, 10))
				}
				t.Logf("%s %s: %d of %d Grove schema paths present in copse with the same type; %d removed from Kubernetes (%v); copse has %d paths",
					kind, gv.Name, len(groveTypes)-len(excepted), len(groveTypes), len(excepted), removedFromKubernetes, len(copseTypes))
			}
		})
	}
}

func assertSubresourcesMatch(t *testing.T, grove, copse *apiextensionsv1.CustomResourceSubresources) {
	t.Helper()
	if grove == nil {
		return
	}
	if copse == nil {
		t.Fatalf("copse has no subresources; Grove has %+v", grove)
	}
	if (grove.Status != nil) != (copse.Status != nil) {
		t.Errorf("status subresource: Grove %v, copse %v", grove.Status != nil, copse.Status != nil)
	}
	if grove.Scale != nil {
		if copse.Scale == nil {
			t.Fatalf("copse has no scale subresource")
		}
		if grove.Scale.SpecReplicasPath != copse.Scale.SpecReplicasPath ||
			grove.Scale.StatusReplicasPath != copse.Scale.StatusReplicasPath ||
			ptr.Deref(grove.Scale.LabelSelectorPath, "") != ptr.Deref(copse.Scale.LabelSelectorPath, "") {
			t.Errorf("scale subresource: Grove %+v, copse %+v", *grove.Scale, *copse.Scale)
		}
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
