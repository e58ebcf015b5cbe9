package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// The example documents the defaults, so it must stay loadable and must not
// drift from them.
func TestExampleConfigurationLoadsAndShowsDefaults(t *testing.T) {
	cfg, err := configv1alpha1.Load("config.example.yaml")
	if err != nil {
		t.Fatalf("loading the example configuration: %v", err)
	}
	if diff := cmp.Diff(configv1alpha1.NewDefaultOperatorConfiguration(), cfg); diff != "" {
		t.Errorf("config.example.yaml differs from the defaults (-defaults +example):\n%s", diff)
	}
}
