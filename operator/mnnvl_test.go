package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/mnnvl"
)

func TestMNNVLPartsNeedTheComputeDomainCRD(t *testing.T) {
	without := meta.NewDefaultRESTMapper(nil)
	with := meta.NewDefaultRESTMapper([]schema.GroupVersion{mnnvl.ComputeDomainGVK.GroupVersion()})
	with.Add(mnnvl.ComputeDomainGVK, meta.RESTScopeNamespace)

	parts, err := newMNNVLParts(without, configv1alpha1.MNNVLConfiguration{Enabled: false})
	if err != nil || len(parts.resources) != 0 || len(parts.decorators) != 0 {
		t.Errorf("disabled: parts %+v, error %v; want none and no error whatever the cluster serves", parts, err)
	}

	_, err = newMNNVLParts(without, configv1alpha1.MNNVLConfiguration{Enabled: true})
	// The words Grove's operator logs, which Grove's e2e looks for.
	for _, want := range []string{"MNNVL preflight check failed", "ComputeDomain CRD", mnnvl.ComputeDomainCRD, "mnnvl.enabled"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("enabled without the CRD: error %v, want one with %q", err, want)
		}
	}

	parts, err = newMNNVLParts(with, configv1alpha1.MNNVLConfiguration{Enabled: true})
	if err != nil {
		t.Fatalf("enabled with the CRD: %v", err)
	}
	if len(parts.resources) != 1 || parts.resources[0].Kind != "ComputeDomain" || len(parts.decorators) != 1 || parts.decorators[0].Name != "mnnvl" {
		t.Errorf("enabled: parts %+v, want the ComputeDomain row and the mnnvl decorator", parts)
	}
}
