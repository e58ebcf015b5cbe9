package trainerparity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	trainercrds "github.com/copse-dev/copse/charts/copse/trainer-crds"
	"github.com/copse-dev/copse/internal/crdschema"
)

// fillIterations is how many objects of each kind the round trip decodes,
// each filled from its own seed.
const fillIterations = 20

// copseKinds are copse's Go types of the kinds `trainer-oracle fill` prints.
var copseKinds = map[string]func() any{
	"TrainJob":                   func() any { return &trainerv1alpha1.TrainJob{} },
	"TrainingRuntime":            func() any { return &trainerv1alpha1.TrainingRuntime{} },
	"ClusterTrainingRuntime":     func() any { return &trainerv1alpha1.ClusterTrainingRuntime{} },
	"TrainJobList":               func() any { return &trainerv1alpha1.TrainJobList{} },
	"TrainingRuntimeList":        func() any { return &trainerv1alpha1.TrainingRuntimeList{} },
	"ClusterTrainingRuntimeList": func() any { return &trainerv1alpha1.ClusterTrainingRuntimeList{} },
}

var _ = Describe("copse's trainer.kubeflow.org API", Label("trainer-parity"), func() {
	It("decodes every field of Kubeflow Trainer's objects strictly and encodes them unchanged", func(ctx context.Context) {
		var objects []json.RawMessage
		runOracle(ctx, &objects, nil, "fill", "--seed", "0", "--iterations", fmt.Sprint(fillIterations))
		Expect(objects).To(HaveLen(fillIterations*len(copseKinds)), "the oracle fills %d objects of each of %d kinds", fillIterations, len(copseKinds))

		perKind := map[string]int{}
		var failures []string
		for i, raw := range objects {
			kind, err := roundTripThroughCopse(raw)
			if err != nil {
				failures = append(failures, fmt.Sprintf("object %d (%s, seed %d): %v", i, kind, i%fillIterations, err))
				continue
			}
			perKind[kind]++
		}
		Expect(failures).To(BeEmpty(), "%d of %d objects fail; the first:\n%s", len(failures), len(objects), strings.Join(failures[:min(5, len(failures))], "\n\n"))
		for kind := range copseKinds {
			Expect(perKind[kind]).To(Equal(fillIterations), "objects of kind %s", kind)
		}
		AddReportEntry("round trip", fmt.Sprintf("%d Kubeflow Trainer objects, every field set, %d of each of %d kinds: unchanged through copse's types", len(objects), fillIterations, len(copseKinds)))
	})

	It("has every property path of Kubeflow Trainer's CRDs, with the same type", func(ctx context.Context) {
		var upstream []apiextensionsv1.CustomResourceDefinition
		runOracle(ctx, &upstream, nil, "crds")
		Expect(upstream).To(HaveLen(3))

		all, err := trainercrds.All()
		Expect(err).NotTo(HaveOccurred())
		copseByKind := map[string]*apiextensionsv1.CustomResourceDefinition{}
		for _, crd := range all {
			copseByKind[crd.Spec.Names.Kind] = crd
		}
		var failures []string
		for i := range upstream {
			report, errs := compareCRDs(&upstream[i], copseByKind[upstream[i].Spec.Names.Kind])
			failures = append(failures, errs...)
			if report != "" {
				AddReportEntry("schema "+upstream[i].Spec.Names.Kind, report)
				fmt.Fprintln(GinkgoWriter, report)
			}
		}
		Expect(failures).To(BeEmpty(), strings.Join(failures, "\n"))
	})
})

// roundTripThroughCopse decodes an upstream object strictly into copse's
// type of its kind, encodes it again and compares the two as JSON values. A
// field Kubeflow Trainer has and copse lacks fails the decode; a field copse
// encodes differently fails the comparison.
func roundTripThroughCopse(raw json.RawMessage) (string, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", err
	}
	if head.APIVersion != trainerv1alpha1.SchemeGroupVersion.String() {
		return head.Kind, fmt.Errorf("apiVersion %q", head.APIVersion)
	}
	newCopse, ok := copseKinds[head.Kind]
	if !ok {
		return head.Kind, fmt.Errorf("copse has no type for kind %q", head.Kind)
	}
	obj := newCopse()
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(obj); err != nil {
		return head.Kind, fmt.Errorf("does not decode strictly into copse's type: %w", err)
	}
	copseJSON, err := json.Marshal(obj)
	if err != nil {
		return head.Kind, fmt.Errorf("encode copse's object: %w", err)
	}
	want, err := jsonValue(raw)
	if err != nil {
		return head.Kind, err
	}
	got, err := jsonValue(copseJSON)
	if err != nil {
		return head.Kind, err
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return head.Kind, fmt.Errorf("changed on the way through copse's type (-Kubeflow Trainer +copse):\n%s", diff)
	}
	return head.Kind, nil
}

// jsonValue decodes JSON into maps, slices and json.Number, so that large
// integers compare exactly.
func jsonValue(raw []byte) (any, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var out any
	if err := decoder.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	return out, nil
}

// compareCRDs checks that copse's CRD serves what Kubeflow Trainer's serves:
// the same group, plural and scope, at least its short names, its versions
// with the same status subresource and printer columns, and every property
// path of its schemas with the same type. It returns a summary, and what
// differs.
func compareCRDs(upstream, copse *apiextensionsv1.CustomResourceDefinition) (string, []string) {
	kind := upstream.Spec.Names.Kind
	if copse == nil {
		return "", []string{fmt.Sprintf("copse has no CRD of kind %s", kind)}
	}
	var failures []string
	fail := func(format string, args ...any) {
		failures = append(failures, kind+": "+fmt.Sprintf(format, args...))
	}
	if copse.Spec.Group != upstream.Spec.Group || copse.Spec.Names.Plural != upstream.Spec.Names.Plural || copse.Spec.Scope != upstream.Spec.Scope {
		fail("identity: copse %s/%s (%s), Kubeflow Trainer %s/%s (%s)",
			copse.Spec.Group, copse.Spec.Names.Plural, copse.Spec.Scope, upstream.Spec.Group, upstream.Spec.Names.Plural, upstream.Spec.Scope)
	}
	if copse.Spec.Names.Singular != upstream.Spec.Names.Singular || copse.Spec.Names.ListKind != upstream.Spec.Names.ListKind {
		fail("names: copse %s/%s, Kubeflow Trainer %s/%s",
			copse.Spec.Names.Singular, copse.Spec.Names.ListKind, upstream.Spec.Names.Singular, upstream.Spec.Names.ListKind)
	}
	for _, short := range upstream.Spec.Names.ShortNames {
		if !slices.Contains(copse.Spec.Names.ShortNames, short) {
			fail("short name %q missing (copse has %v)", short, copse.Spec.Names.ShortNames)
		}
	}
	var summary []string
	for _, uv := range upstream.Spec.Versions {
		cv := crdschema.Version(copse, uv.Name)
		if cv == nil {
			fail("copse lacks version %s", uv.Name)
			continue
		}
		if !cv.Served || (uv.Storage && !cv.Storage) {
			fail("version %s: copse serves it %v, stores it %v; Kubeflow Trainer %v, %v", uv.Name, cv.Served, cv.Storage, uv.Served, uv.Storage)
		}
		if hasStatus(uv.Subresources) != hasStatus(cv.Subresources) {
			fail("version %s: status subresource: Kubeflow Trainer %v, copse %v", uv.Name, hasStatus(uv.Subresources), hasStatus(cv.Subresources))
		}
		if uv.Subresources != nil && uv.Subresources.Scale != nil {
			fail("version %s: Kubeflow Trainer has a scale subresource, which this comparison does not check", uv.Name)
		}
		for _, column := range uv.AdditionalPrinterColumns {
			if !slices.ContainsFunc(cv.AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool {
				return c.Name == column.Name && c.Type == column.Type && c.JSONPath == column.JSONPath
			}) {
				fail("version %s: printer column %s (%s, %s) missing", uv.Name, column.Name, column.Type, column.JSONPath)
			}
		}

		upstreamTypes := crdschema.PathTypes(uv.Schema.OpenAPIV3Schema)
		copseTypes := crdschema.PathTypes(cv.Schema.OpenAPIV3Schema)
		if len(upstreamTypes) < 100 {
			fail("version %s: only %d paths in Kubeflow Trainer's schema; the walk is broken", uv.Name, len(upstreamTypes))
		}
		missing, retyped := crdschema.Compare(upstreamTypes, copseTypes)
		if len(missing) > 0 {
			fail("version %s: %d of Kubeflow Trainer's schema paths missing from copse's, e.g. %v", uv.Name, len(missing), missing[:min(10, len(missing))])
		}
		if len(retyped) > 0 {
			fail("version %s: %d paths typed differently in copse's schema, e.g. %v", uv.Name, len(retyped), retyped[:min(10, len(retyped))])
		}
		summary = append(summary, fmt.Sprintf("%s %s: %d of %d Kubeflow Trainer schema paths present in copse with the same type; copse has %d paths",
			kind, uv.Name, len(upstreamTypes)-len(missing)-len(retyped), len(upstreamTypes), len(copseTypes)))
	}
	return strings.Join(summary, "\n"), failures
}

func hasStatus(s *apiextensionsv1.CustomResourceSubresources) bool {
	return s != nil && s.Status != nil
}
