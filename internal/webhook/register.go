package webhook

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/podclique"
	"github.com/copse-dev/copse/internal/webhook/podcliquescalinggroup"
	"github.com/copse-dev/copse/internal/webhook/podcliqueset"
	"github.com/copse-dev/copse/internal/webhook/training"
)

// Register adds every endpoint of Endpoints to server. Call it once per
// server: registering a path twice panics.
//
// reader is how the PodClique and PodCliqueScalingGroup webhooks find the
// PodCliqueSet an object belongs to, for the Training rules. The operator
// passes its manager's GetAPIReader(), which reads from the API server: a
// cached client could miss an owner created a moment ago and let a
// forbidden change through (see training.OwningPodCliqueSet). The reads
// happen only for the changes a Training rule concerns.
func Register(server ctrlwebhook.Server, reader client.Reader) error {
	// The admission decoders get their own scheme, so that decoding grove.io
	// objects does not depend on what the manager's scheme holds.
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", copsev1alpha1.SchemeGroupVersion, err)
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", autoscalingv1.SchemeGroupVersion, err)
	}
	handlers := map[string]*admission.Webhook{
		MutatePodCliqueSetPath:            admission.WithDefaulter[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Defaulter{}),
		ValidatePodCliqueSetPath:          admission.WithValidator[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Validator{}),
		ValidatePodCliquePath:             admission.WithValidator[*copsev1alpha1.PodClique](scheme, podclique.Validator{Reader: reader}),
		ValidatePodCliqueScalingGroupPath: admission.WithValidator[*copsev1alpha1.PodCliqueScalingGroup](scheme, podcliquescalinggroup.Validator{Reader: reader}),
		ValidatePodCliqueScalePath: admission.WithValidator[*autoscalingv1.Scale](scheme, training.ScaleValidator{
			Kind: "PodClique", NewObject: training.NewPodClique, Reader: reader}),
		ValidatePodCliqueScalingGroupScalePath: admission.WithValidator[*autoscalingv1.Scale](scheme, training.ScaleValidator{
			Kind: "PodCliqueScalingGroup", NewObject: training.NewPodCliqueScalingGroup, Reader: reader}),
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
