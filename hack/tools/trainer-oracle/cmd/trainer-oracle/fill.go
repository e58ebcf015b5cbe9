package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/randfill"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// filledKinds are the kinds fill prints, in order, each with a constructor of
// Trainer's Go type.
var filledKinds = []struct {
	kind string
	new  func() any
}{
	{"TrainJob", func() any { return &trainer.TrainJob{} }},
	{"TrainingRuntime", func() any { return &trainer.TrainingRuntime{} }},
	{"ClusterTrainingRuntime", func() any { return &trainer.ClusterTrainingRuntime{} }},
	{"TrainJobList", func() any { return &trainer.TrainJobList{} }},
	{"TrainingRuntimeList", func() any { return &trainer.TrainingRuntimeList{} }},
	{"ClusterTrainingRuntimeList", func() any { return &trainer.ClusterTrainingRuntimeList{} }},
}

func runFill(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	seed := fs.Int64("seed", 0, "seed of the first object of each kind; object i of a kind uses seed+i")
	iterations := fs.Int("iterations", 1, "objects per kind")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: fill takes no arguments (%q)", errUsage, fs.Args())
	}
	if *iterations < 1 {
		return fmt.Errorf("%w: --iterations must be at least 1, got %d", errUsage, *iterations)
	}
	objects, err := filledObjects(*seed, *iterations)
	if err != nil {
		return err
	}
	// One object a line: indented, the objects would triple in size. A
	// bufio.Writer keeps its first error for Flush.
	w := bufio.NewWriter(stdout)
	for i, raw := range objects {
		sep := ",\n"
		if i == 0 {
			sep = "[\n"
		}
		_, _ = w.WriteString(sep)
		_, _ = w.Write(raw)
	}
	_, _ = w.WriteString("\n]\n")
	return w.Flush()
}

// filledObjects returns iterations objects of each of filledKinds, every
// field set, as their JSON.
func filledObjects(seed int64, iterations int) ([]json.RawMessage, error) {
	scheme := apiruntime.NewScheme()
	utilruntime.Must(trainer.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme)
	var objects []json.RawMessage
	for _, k := range filledKinds {
		for s := seed; s < seed+int64(iterations); s++ {
			raw, err := filledObject(k.kind, k.new, s, codecs)
			if err != nil {
				return nil, fmt.Errorf("%s, seed %d: %w", k.kind, s, err)
			}
			objects = append(objects, raw)
		}
	}
	return objects, nil
}

// filledObject fills a new object of Trainer's type for kind from seed,
// checks that no field was left zero and that its JSON decodes back into
// the same JSON, and returns that JSON.
func filledObject(kind string, newObject func() any, seed int64, codecs serializer.CodecFactory) (json.RawMessage, error) {
	obj := newObject()
	fullFiller(seed, codecs).Fill(obj)
	value := reflect.ValueOf(obj).Elem()
	setZeroScalars(value, rand.New(rand.NewSource(seed)))
	if err := everyFieldSet(value, kind); err != nil {
		return nil, err
	}
	typeMeta := value.FieldByName("TypeMeta").Addr().Interface().(*metav1.TypeMeta)
	typeMeta.APIVersion, typeMeta.Kind = trainer.GroupVersion.String(), kind

	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	// Values whose JSON another decoder would read differently (a
	// non-canonical Quantity, a time with sub-second precision) would make
	// a consumer's round trip fail for a reason of the filler's.
	decoded := newObject()
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(decoded); err != nil {
		return nil, fmt.Errorf("its JSON does not decode into Trainer's type: %w", err)
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("encode the decoded object: %w", err)
	}
	if !bytes.Equal(raw, again) {
		return nil, errors.New("its JSON changes when decoded into Trainer's type and encoded again")
	}
	return raw, nil
}

// fullFiller sets every field: no nil pointers, no empty slices or maps.
// Types whose random bytes do not make valid JSON, or JSON that decodes to
// another value, get fill functions that make valid ones. apimachinery's
// meta fuzzer fills object and list metadata.
func fullFiller(seed int64, codecs serializer.CodecFactory) *randfill.Filler {
	return randfill.New().
		RandSource(rand.NewSource(seed)).
		NilChance(0).
		NumElements(1, 2).
		Funcs(metafuzzer.Funcs(codecs)...).
		// These replace the meta fuzzer's functions of the same types.
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
			// JSON times have whole seconds; the meta fuzzer leaves some zero.
			func(ts *metav1.Time, c randfill.Continue) {
				*ts = metav1.Unix(c.Int63n(1<<31)+1, 0)
			},
			func(d *metav1.Duration, c randfill.Continue) {
				d.Duration = time.Duration(c.Int63n(1<<40) + 1)
			},
			// The meta fuzzer leaves half of the *int fields nil (Volcano's
			// networkTopology.highestTierAllowed is one).
			func(p **int, c randfill.Continue) {
				i := int(c.Int31n(1000) + 1)
				*p = &i
			},
			// The meta fuzzer's selectors drop values for Exists and
			// DoesNotExist; validity does not matter here, presence does.
			func(s *metav1.LabelSelector, c randfill.Continue) {
				c.FillNoCustom(s)
			},
		)
}

// opaqueTypes are filled whole by fullFiller's functions: their fields are
// not JSON fields, and the value itself must not be zero.
var opaqueTypes = map[reflect.Type]bool{
	reflect.TypeFor[resource.Quantity]():       true,
	reflect.TypeFor[intstr.IntOrString]():      true,
	reflect.TypeFor[metav1.Time]():             true,
	reflect.TypeFor[metav1.MicroTime]():        true,
	reflect.TypeFor[metav1.Duration]():         true,
	reflect.TypeFor[apiruntime.RawExtension](): true,
}

// apimachineryMetadata are Kubernetes' fields, not Trainer's, filled by the
// meta fuzzer, which leaves some unset on purpose; they are not walked.
var apimachineryMetadata = map[reflect.Type]bool{
	reflect.TypeFor[metav1.TypeMeta]():   true,
	reflect.TypeFor[metav1.ObjectMeta](): true,
	reflect.TypeFor[metav1.ListMeta]():   true,
}

// walkFields calls leaf for every value under v that has no fields of its
// own to walk: scalars, opaque types, nil pointers and interfaces, empty
// slices and maps. path names the value in Go syntax. Map values are walked
// through a copy that is stored back, so leaf may change them.
func walkFields(v reflect.Value, path string, leaf func(v reflect.Value, path string) error) error {
	switch {
	case apimachineryMetadata[v.Type()]:
		return nil
	case opaqueTypes[v.Type()]:
		return leaf(v, path)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return leaf(v, path)
		}
		return walkFields(v.Elem(), path, leaf)
	case reflect.Struct:
		for i := range v.NumField() {
			field := v.Type().Field(i)
			if !field.IsExported() {
				continue
			}
			if err := walkFields(v.Field(i), path+"."+field.Name, leaf); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return leaf(v, path)
		}
		for i := range v.Len() {
			if err := walkFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i), leaf); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if v.Len() == 0 {
			return leaf(v, path)
		}
		for _, key := range v.MapKeys() {
			elem := reflect.New(v.Type().Elem()).Elem()
			elem.Set(v.MapIndex(key))
			if err := walkFields(elem, fmt.Sprintf("%s[%v]", path, key), leaf); err != nil {
				return err
			}
			v.SetMapIndex(key, elem)
		}
		return nil
	default:
		return leaf(v, path)
	}
}

// setZeroScalars gives every zero string, bool and number under v a random
// non-zero value: randfill leaves one string in twenty empty and half the
// bools false, which omitempty drops from the JSON.
func setZeroScalars(v reflect.Value, r *rand.Rand) {
	_ = walkFields(v, "", func(v reflect.Value, _ string) error {
		if !v.CanSet() || !v.IsZero() {
			return nil
		}
		switch v.Kind() {
		case reflect.String:
			const letters = "abcdefghijklmnopqrstuvwxyz"
			b := make([]byte, 1+r.Intn(8))
			for i := range b {
				b[i] = letters[r.Intn(len(letters))]
			}
			v.SetString(string(b))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(1 + r.Int63n(100))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(1 + uint64(r.Int63n(100)))
		case reflect.Float32, reflect.Float64:
			v.SetFloat(1 + r.Float64())
		}
		return nil
	})
}

// everyFieldSet fails when a field under v was left zero (a nil pointer, an
// empty slice or map, a zero scalar or opaque value), so that an object's
// JSON holds every field of Trainer's types. Kubernetes' object and list
// metadata are not checked.
func everyFieldSet(v reflect.Value, path string) error {
	return walkFields(v, path, func(v reflect.Value, path string) error {
		if v.IsZero() || ((v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0) {
			return fmt.Errorf("the filler left %s (%s) zero", path, v.Type())
		}
		return nil
	})
}
