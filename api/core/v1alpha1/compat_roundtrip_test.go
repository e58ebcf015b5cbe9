package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/randfill"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestGroveObjectsRoundTripThroughCopseTypes proves that copse's types are a
// JSON superset of Grove's: a Grove object with every field set, encoded,
// decoded strictly into the copse type and encoded again, is unchanged. A
// field Grove has and copse lacks fails the strict decode; a field copse
// encodes differently fails the comparison.
func TestGroveObjectsRoundTripThroughCopseTypes(t *testing.T) {
	cases := []struct {
		name     string
		upstream func() any
		copse    func() any
	}{
		{"PodCliqueSet", func() any { return &grovecorev1alpha1.PodCliqueSet{} }, func() any { return &copsev1alpha1.PodCliqueSet{} }},
		{"PodClique", func() any { return &grovecorev1alpha1.PodClique{} }, func() any { return &copsev1alpha1.PodClique{} }},
		{"PodCliqueScalingGroup", func() any { return &grovecorev1alpha1.PodCliqueScalingGroup{} }, func() any { return &copsev1alpha1.PodCliqueScalingGroup{} }},
		{"PodCliqueSetList", func() any { return &grovecorev1alpha1.PodCliqueSetList{} }, func() any { return &copsev1alpha1.PodCliqueSetList{} }},
		{"PodCliqueList", func() any { return &grovecorev1alpha1.PodCliqueList{} }, func() any { return &copsev1alpha1.PodCliqueList{} }},
		{"PodCliqueScalingGroupList", func() any { return &grovecorev1alpha1.PodCliqueScalingGroupList{} }, func() any { return &copsev1alpha1.PodCliqueScalingGroupList{} }},
		{"ClusterTopologyBinding", func() any { return &grovecorev1alpha1.ClusterTopologyBinding{} }, func() any { return &copsev1alpha1.ClusterTopologyBinding{} }},
		{"ClusterTopologyBindingList", func() any { return &grovecorev1alpha1.ClusterTopologyBindingList{} }, func() any { return &copsev1alpha1.ClusterTopologyBindingList{} }},
	}
	const iterations = 20
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(0); seed < iterations; seed++ {
				filler := fullFiller(seed)
				upstream := tc.upstream()
				filler.Fill(upstream)
				assertEveryFieldSet(t, reflect.ValueOf(upstream).Elem(), tc.name)

				groveJSON, err := json.Marshal(upstream)
				if err != nil {
					t.Fatalf("seed %d: encode Grove %s: %v", seed, tc.name, err)
				}
				copseObj := tc.copse()
				dec := json.NewDecoder(bytes.NewReader(groveJSON))
				dec.DisallowUnknownFields()
				if err := dec.Decode(copseObj); err != nil {
					t.Fatalf("seed %d: Grove %s does not decode strictly into the copse type: %v", seed, tc.name, err)
				}
				copseJSON, err := json.Marshal(copseObj)
				if err != nil {
					t.Fatalf("seed %d: encode copse %s: %v", seed, tc.name, err)
				}
				if diff := cmp.Diff(asGeneric(t, groveJSON), asGeneric(t, copseJSON)); diff != "" {
					t.Fatalf("seed %d: %s changed on the way through copse's type (-grove +copse):\n%s", seed, tc.name, diff)
				}
			}
		})
	}
}

// fullFiller sets every field: no nil pointers, no empty slices or maps.
// Types whose random bytes are not valid JSON values get fill functions that
// produce valid ones.
func fullFiller(seed int64) *randfill.Filler {
	// The meta fuzzer encodes embedded objects, so it needs a real scheme.
	scheme := runtime.NewScheme()
	utilruntime.Must(copsev1alpha1.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme)
	return randfill.New().
		RandSource(rand.NewSource(seed)).
		NilChance(0).
		NumElements(1, 2).
		Funcs(metafuzzer.Funcs(codecs)...).
		Funcs(
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewQuantity(c.Int63n(1<<20)+1, resource.DecimalSI)
			},
			func(v *intstr.IntOrString, c randfill.Continue) {
				if c.Bool() {
					*v = intstr.FromInt32(c.Int31n(1000) + 1)
				} else {
					*v = intstr.FromString("p" + c.String(8))
				}
			},
			// The meta fuzzer sometimes leaves times zero, which encodes as null.
			func(ts *metav1.Time, c randfill.Continue) {
				*ts = metav1.Unix(c.Int63n(1<<31)+1, 0)
			},
			func(d *metav1.Duration, c randfill.Continue) {
				d.Duration = time.Duration(c.Int63n(1 << 40))
			},
		)
}

// assertEveryFieldSet fails when the filler left an exported field at its
// zero value, so the round trip really covers every field Grove has.
// apimachinery's object and list metadata are skipped: their fuzzer leaves
// some fields unset on purpose, and they are Kubernetes' fields, not Grove's.
func assertEveryFieldSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.ListMeta]():
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			t.Fatalf("filler left %s nil", path)
		}
		assertEveryFieldSet(t, v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			field := v.Type().Field(i)
			if !field.IsExported() {
				continue
			}
			assertEveryFieldSet(t, v.Field(i), path+"."+field.Name)
		}
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			t.Fatalf("filler left %s empty", path)
		}
	}
}

func asGeneric(t *testing.T, raw []byte) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode JSON: %v", err)
	}
	return out
}
