package podclique

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestSetupWithManager registers the controller with a manager that is never
// started, so no API server is needed; it proves the watches resolve against
// the scheme and that unset fields are filled from the manager.
func TestSetupWithManager(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:     testScheme(t),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{MaxConcurrentReconciles: 4}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if r.Client == nil || r.Scheme == nil || r.Recorder == nil || r.Expectations == nil || r.APIReader == nil {
		t.Errorf("fields not filled from the manager: %+v", r)
	}
}
