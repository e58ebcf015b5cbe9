// Package kueue_test checks copse with Kueue end to end: the real Kueue
// v0.19.2 (its scheduler, its job integrations and its webhooks, run as a
// local process by the framework) next to the real operator binary, the real
// JobSet controller and a real control plane.
package kueue_test

import (
	"testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "kueue", WithKueue: true, WithJobSet: true, WithOperator: true,
	Kueue: framework.KueueOptions{WaitForPodsReady: kueueWaitForPodsReady},
	Operator: framework.OperatorOptions{
		Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.Kueue.Enabled = true
			// Packing becomes the Workloads' topology requests
			// (topology_test.go).
			cfg.TopologyAwareScheduling.Enabled = true
			// Crash specs kill the operator; a short lease lets its
			// successor take over in seconds.
			framework.ShortLeases(cfg)
		},
	}}, nil)

func TestKueue(t *testing.T) { framework.RunSuite(t, "Kueue Suite") }
