package kueue

import (
	"strings"
	"testing"
)

func TestMaxPodSetsOf(t *testing.T) {
	workload := func(podSets string) string {
		return `{"components":{"schemas":{"io.x-k8s.kueue.v1beta2.Workload":{"properties":{"spec":{"properties":{"podSets":` + podSets + `}}}}}}}`
	}
	tests := []struct {
		name    string
		doc     string
		want    int
		wantErr string
	}{
		{name: "Kueue v0.19", doc: workload(`{"type":"array","maxItems":18,"minItems":1}`), want: 18},
		{name: "Kueue v0.17", doc: workload(`{"type":"array","maxItems":8}`), want: 8},
		{name: "no maxItems", doc: workload(`{"type":"array"}`), wantErr: "has no spec.podSets.maxItems"},
		{name: "a maxItems of 0", doc: workload(`{"type":"array","maxItems":0}`), wantErr: "spec.podSets.maxItems is 0"},
		{name: "no Workload schema", doc: `{"components":{"schemas":{"io.x-k8s.kueue.v1beta2.ClusterQueue":{}}}}`, wantErr: "no schema io.x-k8s.kueue.v1beta2.Workload"},
		{name: "not JSON", doc: `<html>`, wantErr: "parsing the OpenAPI v3 document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := maxPodSetsOf([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if EffectiveMaxPodSets(0) != DefaultMaxPodSets || EffectiveMaxPodSets(8) != 8 {
		t.Error("EffectiveMaxPodSets: 0 stands for the default, any other value for itself")
	}
}
