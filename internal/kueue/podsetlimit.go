package kueue

import (
	"encoding/json"
	"fmt"

	"k8s.io/client-go/openapi"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// DefaultMaxPodSets is the most pod sets a Workload of Kueue v0.19 may have
// (its CRD's maxItems of spec.podSets; 8 before v0.19). copse uses it when
// the cluster's own limit cannot be read (ServedMaxPodSets).
const DefaultMaxPodSets = 18

// workloadSchemaName is the name the API server publishes the Workload
// CRD's schema under in its OpenAPI v3 document of kueue.x-k8s.io/v1beta2.
const workloadSchemaName = "io.x-k8s.kueue.v1beta2.Workload"

// ServedMaxPodSets reads the most pod sets a Workload may have from the
// schema the cluster serves for Kueue's Workload CRD (spec.podSets'
// maxItems), so that copse's refusal follows the Kueue installed, whatever
// its version. Reading the OpenAPI document needs no permission beyond
// discovery's.
func ServedMaxPodSets(client openapi.Client) (int, error) {
	paths, err := client.Paths()
	if err != nil {
		return 0, fmt.Errorf("listing the API server's OpenAPI v3 documents: %w", err)
	}
	path := "apis/" + kueue.SchemeGroupVersion.Group + "/" + kueue.SchemeGroupVersion.Version
	gv, ok := paths[path]
	if !ok {
		return 0, fmt.Errorf("the API server publishes no OpenAPI v3 document %s", path)
	}
	doc, err := gv.Schema("application/json")
	if err != nil {
		return 0, fmt.Errorf("reading the OpenAPI v3 document %s: %w", path, err)
	}
	return maxPodSetsOf(doc)
}

// maxPodSetsOf finds spec.podSets' maxItems of the Workload schema in an
// OpenAPI v3 document.
func maxPodSetsOf(doc []byte) (int, error) {
	type schema struct {
		Properties map[string]*schema `json:"properties"`
		MaxItems   *int               `json:"maxItems"`
	}
	var parsed struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return 0, fmt.Errorf("parsing the OpenAPI v3 document: %w", err)
	}
	workload := parsed.Components.Schemas[workloadSchemaName]
	if workload == nil {
		return 0, fmt.Errorf("the OpenAPI v3 document has no schema %s", workloadSchemaName)
	}
	var podSets *schema
	if spec := workload.Properties["spec"]; spec != nil {
		podSets = spec.Properties["podSets"]
	}
	if podSets == nil || podSets.MaxItems == nil {
		return 0, fmt.Errorf("schema %s has no spec.podSets.maxItems", workloadSchemaName)
	}
	if n := *podSets.MaxItems; n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("schema %s: spec.podSets.maxItems is %d", workloadSchemaName, *podSets.MaxItems)
}

// EffectiveMaxPodSets is the limit a configured n stands for: n, or
// DefaultMaxPodSets when n is 0 (not read).
func EffectiveMaxPodSets(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxPodSets
}
