package main

import (
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func TestMain(m *testing.M) {
	// controller-runtime complains loudly when its global logger is unset.
	ctrl.SetLogger(newLogger(configv1alpha1.LoggingConfiguration{
		Level:  configv1alpha1.LogLevelInfo,
		Format: configv1alpha1.LogFormatText,
	}, os.Stderr))
	os.Exit(m.Run())
}
