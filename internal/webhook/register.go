package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/podclique"
	"github.com/copse-dev/copse/internal/webhook/podcliquescalinggroup"
	"github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

// Register adds every endpoint of Endpoints to server. Call it once per
// server: registering a path twice panics.
func Register(server ctrlwebhook.Server) error {
	// The admission decoders get their own scheme, so that decoding grove.io
	// objects does not depend on what the manager's scheme holds.
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", copsev1alpha1.SchemeGroupVersion, err)
	}
	handlers := map[string]*admission.Webhook{
		MutatePodCliqueSetPath:            admission.WithDefaulter[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Defaulter{}),
		ValidatePodCliqueSetPath:          admission.WithValidator[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Validator{}),
		ValidatePodCliquePath:             admission.WithValidator[*copsev1alpha1.PodClique](scheme, podclique.Validator{}),
		ValidatePodCliqueScalingGroupPath: admission.WithValidator[*copsev1alpha1.PodCliqueScalingGroup](scheme, podcliquescalinggroup.Validator{}),
	}
	for _, endpoint := range Endpoints() {
		handler, found := handlers[endpoint.Path]
		if !found {
			return fmt.Errorf("no handler for webhook %s at %s", endpoint.Name, endpoint.Path)
		}
		server.Register(endpoint.Path, handler)
	}
	return nil
}
