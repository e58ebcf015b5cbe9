package foundation_test

import (
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

var env = framework.SetupSuite(framework.Options{Name: "foundation", WithJobSet: true}, nil)

func TestFoundation(t *testing.T) { framework.RunSuite(t, "Foundation Suite") }
