package webhook

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/clustertopologybinding"
	"github.com/copse-dev/copse/internal/webhook/podclique"
	"github.com/copse-dev/copse/internal/webhook/podcliquescalinggroup"
	"github.com/copse-dev/copse/internal/webhook/podcliqueset"
	"github.com/copse-dev/copse/internal/webhook/training"
	"github.com/copse-dev/copse/internal/webhook/trainjob"
)

// Register adds every endpoint of Endpoints to server. Call it once per
// server: registering a path twice panics.
//
// limits are the operator's limits on pods (its configuration's limits
// section), which the validating webhooks enforce; both must be positive,
// as a defaulted and validated configuration has them.
//
// reader is how the PodClique and PodCliqueScalingGroup webhooks find the
// PodCliqueSet an object belongs to, for the Training rules. The operator
// passes its manager's GetAPIReader(), which reads from the API server: a
// cached client could miss an owner created a moment ago and let a
// forbidden change through (see training.OwningPodCliqueSet). The reads
// happen only for the changes a Training rule concerns.
//
// features says which optional parts the webhooks serve and admit.
func Register(server ctrlwebhook.Server, reader client.Reader, limits configv1alpha1.LimitsConfiguration, features Features) error {
	if limits.MaxPodsPerReplica <= 0 || limits.MaxPodsPerPodCliqueSet <= 0 {
		// Zero would refuse every workload: a configuration that skipped
		// defaulting, not a choice.
		return fmt.Errorf("webhook pod limits must be positive, got maxPodsPerReplica=%d maxPodsPerPodCliqueSet=%d",
			limits.MaxPodsPerReplica, limits.MaxPodsPerPodCliqueSet)
	}
	// The admission decoders get their own scheme, so that decoding grove.io
	// objects does not depend on what the manager's scheme holds.
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", copsev1alpha1.SchemeGroupVersion, err)
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", autoscalingv1.SchemeGroupVersion, err)
	}
	if err := trainerv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering %s types for admission decoding: %w", trainerv1alpha1.SchemeGroupVersion, err)
	}
	handlers := map[string]*admission.Webhook{
		MutatePodCliqueSetPath: admission.WithDefaulter[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Defaulter{KueueEnabled: features.Kueue,
			MNNVLDefaultGroup: features.MNNVLDefaultGroup}),
		ValidatePodCliqueSetPath: admission.WithValidator[*copsev1alpha1.PodCliqueSet](scheme, podcliqueset.Validator{Limits: limits,
			MNNVLEnabled: features.MNNVL, TopologyAwareScheduling: features.TopologyAware, Reader: reader, KueueEnabled: features.Kueue,
			KueueMaxPodSets: features.KueueMaxPodSets}),
		ValidatePodCliquePath: admission.WithValidator[*copsev1alpha1.PodClique](scheme,
			podclique.Validator{Reader: reader, Limits: limits, KueueEnabled: features.Kueue}),
		ValidatePodCliqueScalingGroupPath: admission.WithValidator[*copsev1alpha1.PodCliqueScalingGroup](scheme,
			podcliquescalinggroup.Validator{Reader: reader, Limits: limits, KueueEnabled: features.Kueue}),
		ValidatePodCliqueScalePath: admission.WithValidator[*autoscalingv1.Scale](scheme, training.ScaleValidator{
			Kind: "PodClique", NewObject: training.NewPodClique, Reader: reader, Limits: limits, KueueEnabled: features.Kueue}),
		ValidatePodCliqueScalingGroupScalePath: admission.WithValidator[*autoscalingv1.Scale](scheme, training.ScaleValidator{
			Kind: "PodCliqueScalingGroup", NewObject: training.NewPodCliqueScalingGroup, Reader: reader, Limits: limits, KueueEnabled: features.Kueue}),
		ValidateClusterTopologyBindingPath: admission.WithValidator[*copsev1alpha1.ClusterTopologyBinding](scheme,
			clustertopologybinding.Validator{Backends: clustertopologybinding.Backends{Kueue: features.Kueue}}),
		MutateTrainJobPath: admission.WithDefaulter[*trainerv1alpha1.TrainJob](scheme, trainjob.Defaulter{Clock: clock.RealClock{},
			MNNVLDefaultGroup: features.MNNVLDefaultGroup}),
		ValidateTrainJobPath:        admission.WithValidator[*trainerv1alpha1.TrainJob](scheme, trainjob.Validator{Reader: reader, MNNVLEnabled: features.MNNVL}),
		ValidateTrainingRuntimePath: admission.WithValidator[*trainerv1alpha1.TrainingRuntime](scheme, trainjob.RuntimeValidator{}),
		ValidateClusterTrainingRuntimePath: admission.WithValidator[*trainerv1alpha1.ClusterTrainingRuntime](scheme,
			trainjob.ClusterRuntimeValidator{}),
	}
	for _, endpoint := range Endpoints() {
		if endpoint.TrainJob && !features.TrainJob {
			continue
		}
		handler, found := handlers[endpoint.Path]
		if !found {
			return fmt.Errorf("no handler for webhook %s at %s", endpoint.Name, endpoint.Path)
		}
		server.Register(endpoint.Path, handler)
	}
	return nil
}

// Features are the optional parts of copse the webhooks serve or admit, from
// the operator configuration.
type Features struct {
	// TrainJob serves the TrainJob front-end's webhooks too.
	TrainJob bool
	// TopologyAware: topologyConstraints are applied
	// (topologyAwareScheduling.enabled, with the Workload API scheduler
	// backend). When false a new PodCliqueSet with one is refused; when true
	// the PodCliqueSet webhook reads the ClusterTopologyBinding it names.
	TopologyAware bool
	// MNNVL is mnnvl.enabled: without it, a PodCliqueSet or TrainJob
	// naming an MNNVL group is refused.
	MNNVL bool
	// MNNVLDefaultGroup is mnnvl.defaultGroup: the group a new PodCliqueSet
	// or TrainJob that names none is given ("" for none).
	MNNVLDefaultGroup string
	// Kueue is kueue.enabled: a new PodCliqueSet with the label
	// kueue.x-k8s.io/queue-name is created suspended, and the label's rules
	// apply (podcliqueset.ValidateKueue). Off, the label means nothing.
	Kueue bool
	// KueueMaxPodSets is the most pod sets the Kueue installed takes in a
	// Workload (kueue.ServedMaxPodSets); 0 for kueue.DefaultMaxPodSets.
	KueueMaxPodSets int
}
