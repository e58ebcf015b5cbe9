package rules

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func TestReplicasAtLeastOne(t *testing.T) {
	path := field.NewPath("spec", "replicas")
	tests := []struct {
		name     string
		replicas int32
		want     []string
	}{
		{name: "one is enough", replicas: 1},
		{name: "many", replicas: 100},
		{name: "zero", replicas: 0, want: []string{"spec.replicas: Invalid value: 0: must be at least 1"}},
		{name: "negative", replicas: -2, want: []string{"spec.replicas: Invalid value: -2: must be at least 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ReplicasAtLeastOne(tc.replicas, path), tc.want)
		})
	}
}

func TestMinAvailableWithinReplicas(t *testing.T) {
	minPath := field.NewPath("spec", "minAvailable")
	replicasPath := field.NewPath("spec", "replicas")
	tests := []struct {
		name         string
		minAvailable *int32
		replicas     int32
		want         []string
	}{
		{name: "unset is not checked", replicas: 3},
		{name: "equal to replicas", minAvailable: ptr.To[int32](3), replicas: 3},
		{name: "one", minAvailable: ptr.To[int32](1), replicas: 3},
		{name: "zero", minAvailable: ptr.To[int32](0), replicas: 3,
			want: []string{"spec.minAvailable: Invalid value: 0: must be at least 1"}},
		{name: "above replicas names the replicas field and its value", minAvailable: ptr.To[int32](5), replicas: 3,
			want: []string{"spec.minAvailable: Invalid value: 5: must not be greater than spec.replicas (3)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, MinAvailableWithinReplicas(tc.minAvailable, tc.replicas, minPath, replicasPath), tc.want)
		})
	}
}

func TestAutoScalingWithinBounds(t *testing.T) {
	config := field.NewPath("spec", "autoScalingConfig")
	minPath := field.NewPath("spec", "minAvailable")
	replicasPath := field.NewPath("spec", "replicas")
	tests := []struct {
		name         string
		minReplicas  *int32
		maxReplicas  int32
		replicas     int32
		minAvailable int32
		want         []string
	}{
		{name: "within bounds", minReplicas: ptr.To[int32](2), maxReplicas: 8, replicas: 4, minAvailable: 2},
		{name: "minReplicas unset", maxReplicas: 8, replicas: 4, minAvailable: 4},
		{name: "minReplicas below minAvailable", minReplicas: ptr.To[int32](1), maxReplicas: 8, replicas: 4, minAvailable: 2,
			want: []string{"spec.autoScalingConfig.minReplicas: Invalid value: 1: must not be less than spec.minAvailable (2)"}},
		{name: "maxReplicas below minReplicas", minReplicas: ptr.To[int32](4), maxReplicas: 3, replicas: 2, minAvailable: 2,
			want: []string{"spec.autoScalingConfig.maxReplicas: Invalid value: 3: must not be less than spec.autoScalingConfig.minReplicas (4)"}},
		{name: "maxReplicas below replicas", minReplicas: ptr.To[int32](2), maxReplicas: 3, replicas: 4, minAvailable: 2,
			want: []string{"spec.autoScalingConfig.maxReplicas: Invalid value: 3: must not be less than spec.replicas (4)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := AutoScalingWithinBounds(tc.minReplicas, tc.maxReplicas, tc.replicas, tc.minAvailable, config, minPath, replicasPath)
			webhooktest.ExpectErrors(t, errs, tc.want)
		})
	}
}

func TestDNSLabel(t *testing.T) {
	path := field.NewPath("name")
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{name: "valid", value: "decode-1"},
		{name: "empty", value: "", want: []string{"name: Required value"}},
		{name: "upper case", value: "Decode", want: []string{`name: Invalid value: "Decode": a lowercase RFC 1123 label`}},
		{name: "dots are not allowed in a label", value: "a.b", want: []string{`name: Invalid value: "a.b"`}},
		{name: "too long", value: strings.Repeat("a", 64), want: []string{"must be no more than 63 characters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, DNSLabel(tc.value, path), tc.want)
		})
	}
}

func TestNoDuplicates(t *testing.T) {
	pathOf := func(i int) *field.Path { return field.NewPath("items").Index(i).Child("name") }
	tests := []struct {
		name   string
		values []string
		want   []string
	}{
		{name: "distinct", values: []string{"a", "b"}},
		{name: "empty values are left to other checks", values: []string{"", ""}},
		{name: "each repeat is reported at its own index", values: []string{"a", "b", "a", "a"},
			want: []string{`items[2].name: Duplicate value: "a"`, `items[3].name: Duplicate value: "a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, NoDuplicates(tc.values, pathOf), tc.want)
		})
	}
}

func TestToAdmissionError(t *testing.T) {
	if err := ToAdmissionError("PodClique", "x", nil); err != nil {
		t.Fatalf("no field errors gave %v, want nil", err)
	}
	err := ToAdmissionError("PodClique", "x", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), 0, "must be at least 1")})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want an Invalid status error", err)
	}
	want := `PodClique.grove.io "x" is invalid: spec.replicas: Invalid value: 0: must be at least 1`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}
