package kueue

import (
	"fmt"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func bindingOf(keys ...string) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	b.Name = "fleet"
	for i, k := range keys {
		b.Spec.Levels = append(b.Spec.Levels, grovecorev1alpha1.TopologyLevel{Domain: grovecorev1alpha1.TopologyDomain(fmt.Sprintf("l%d", i)), Key: k})
	}
	return b
}

func TestTopology(t *testing.T) {
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("example.com/level-%d", i)
	}
	tests := []struct {
		name       string
		keys       []string
		wantLevels []string
		wantErrs   []string
	}{
		{
			name:       "levels in the binding's order, broadest first",
			keys:       []string{"topology.kubernetes.io/zone", "example.com/block", "example.com/rack", "kubernetes.io/hostname"},
			wantLevels: []string{"topology.kubernetes.io/zone", "example.com/block", "example.com/rack", "kubernetes.io/hostname"},
		},
		{
			name:       "no hostname level",
			keys:       []string{"example.com/block", "example.com/rack"},
			wantLevels: []string{"example.com/block", "example.com/rack"},
		},
		{
			name:       "sixteen levels",
			keys:       many[:16],
			wantLevels: many[:16],
		},
		{
			name:     "seventeen levels",
			keys:     many,
			wantErrs: []string{"spec.levels: Too many: 17: must have at most 16 items"},
		},
		{
			name: "hostname above the narrowest level",
			keys: []string{"example.com/rack", "kubernetes.io/hostname", "example.com/numa"},
			wantErrs: []string{`spec.levels[1].key: Invalid value: "kubernetes.io/hostname": ` +
				"Kueue's Topology takes kubernetes.io/hostname only as its last (narrowest) level"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Topology(bindingOf(tt.keys...))
			var texts []string
			for _, e := range errs {
				texts = append(texts, e.Error())
			}
			if diff := cmp.Diff(tt.wantErrs, texts); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tt.wantErrs != nil {
				if got != nil {
					t.Errorf("Topology = %+v with errors, want nil", got)
				}
				return
			}
			if got.Name != "fleet" || got.Kind != "Topology" || got.APIVersion != "kueue.x-k8s.io/v1beta2" {
				t.Errorf("Topology is %s %s, want kueue.x-k8s.io/v1beta2 Topology fleet", got.APIVersion+"/"+got.Kind, got.Name)
			}
			if diff := cmp.Diff(tt.wantLevels, TopologyLevels(got)); diff != "" {
				t.Errorf("levels (-want +got):\n%s", diff)
			}
			if !TopologyMatches(got, bindingOf(tt.keys...)) {
				t.Errorf("TopologyMatches(Topology(b), b) = false")
			}
		})
	}
}

func TestTopologyMatches(t *testing.T) {
	topology := &kueue.Topology{Spec: kueue.TopologySpec{Levels: []kueue.TopologyLevel{{NodeLabel: "a"}, {NodeLabel: "b"}}}}
	for _, tt := range []struct {
		keys []string
		want bool
	}{
		{[]string{"a", "b"}, true},
		{[]string{"b", "a"}, false},
		{[]string{"a"}, false},
		{[]string{"a", "b", "c"}, false},
	} {
		if got := TopologyMatches(topology, bindingOf(tt.keys...)); got != tt.want {
			t.Errorf("TopologyMatches([a b], %s) = %v, want %v", strings.Join(tt.keys, " "), got, tt.want)
		}
	}
}
