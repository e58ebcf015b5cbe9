// Package core_test checks the behaviour both workload types share, end to
// end: the objects a PodCliqueSet generates, gang scheduling through the
// Workload API, and gang termination, with the real operator binary running
// against a real control plane.
package core_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "core", WithOperator: true}, nil)

func TestCore(t *testing.T) { framework.RunSuite(t, "Core Suite") }
