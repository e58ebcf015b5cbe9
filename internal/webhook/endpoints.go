package webhook

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// Paths the webhook server serves. They are part of the operator's contract
// with its MutatingWebhookConfiguration and ValidatingWebhookConfiguration,
// and follow controller-runtime's /mutate-<group>-<version>-<kind> scheme.
const (
	MutatePodCliqueSetPath            = "/mutate-grove-io-v1alpha1-podcliqueset"
	ValidatePodCliqueSetPath          = "/validate-grove-io-v1alpha1-podcliqueset"
	ValidatePodCliquePath             = "/validate-grove-io-v1alpha1-podclique"
	ValidatePodCliqueScalingGroupPath = "/validate-grove-io-v1alpha1-podcliquescalinggroup"
	// The scale subresources: replica changes through `kubectl scale` or an
	// autoscaler reach these, not the kinds' own webhooks.
	ValidatePodCliqueScalePath             = "/validate-grove-io-v1alpha1-podclique-scale"
	ValidatePodCliqueScalingGroupScalePath = "/validate-grove-io-v1alpha1-podcliquescalinggroup-scale"
	ValidateClusterTopologyBindingPath     = "/validate-grove-io-v1alpha1-clustertopologybinding"

	// The TrainJob front-end's, served when it is enabled.
	MutateTrainJobPath                 = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
	ValidateTrainJobPath               = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
	ValidateTrainingRuntimePath        = "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime"
	ValidateClusterTrainingRuntimePath = "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"
)

// Endpoint describes one webhook as a webhook configuration must declare it.
type Endpoint struct {
	// Name is the webhook's name in its configuration (a qualified name,
	// unique within the configuration).
	Name string
	// Path is where the operator's webhook server serves it.
	Path string
	// Mutating webhooks go into a MutatingWebhookConfiguration, the others
	// into a ValidatingWebhookConfiguration.
	Mutating bool
	// Group, Version and Resource select the requests sent to it; every
	// endpoint handles CREATE and UPDATE. Resource may name a subresource
	// ("podcliques/scale"), as a webhook rule does.
	Group, Version, Resource string
	// Scope is the rule's scope: Namespaced, or Cluster for cluster-scoped
	// kinds (ClusterTrainingRuntime, ClusterTopologyBinding).
	Scope string
	// TrainJob marks the TrainJob front-end's webhooks, registered only
	// when controllers.trainJob is enabled.
	TrainJob bool
}

// Endpoints lists every webhook copse serves, for whoever writes the webhook
// configurations (the Helm chart, the e2e framework).
func Endpoints() []Endpoint {
	return append(groveEndpoints(), trainJobEndpoints()...)
}

func groveEndpoints() []Endpoint {
	group, version := copsev1alpha1.SchemeGroupVersion.Group, copsev1alpha1.SchemeGroupVersion.Version
	endpoints := []Endpoint{
		{Name: "default.podcliquesets.grove.io", Path: MutatePodCliqueSetPath, Mutating: true,
			Group: group, Version: version, Resource: "podcliquesets"},
		{Name: "validate.podcliquesets.grove.io", Path: ValidatePodCliqueSetPath,
			Group: group, Version: version, Resource: "podcliquesets"},
		{Name: "validate.podcliques.grove.io", Path: ValidatePodCliquePath,
			Group: group, Version: version, Resource: "podcliques"},
		{Name: "validate.podcliquescalinggroups.grove.io", Path: ValidatePodCliqueScalingGroupPath,
			Group: group, Version: version, Resource: "podcliquescalinggroups"},
		{Name: "validate-scale.podcliques.grove.io", Path: ValidatePodCliqueScalePath,
			Group: group, Version: version, Resource: "podcliques/scale"},
		{Name: "validate-scale.podcliquescalinggroups.grove.io", Path: ValidatePodCliqueScalingGroupScalePath,
			Group: group, Version: version, Resource: "podcliquescalinggroups/scale"},
	}
	for i := range endpoints {
		endpoints[i].Scope = "Namespaced"
	}
	return append(endpoints, Endpoint{Name: "validate.clustertopologybindings.grove.io", Path: ValidateClusterTopologyBindingPath,
		Group: group, Version: version, Resource: "clustertopologybindings", Scope: "Cluster"})
}

func trainJobEndpoints() []Endpoint {
	group, version := trainerv1alpha1.SchemeGroupVersion.Group, trainerv1alpha1.SchemeGroupVersion.Version
	return []Endpoint{
		{Name: "default.trainjobs.trainer.kubeflow.org", Path: MutateTrainJobPath, Mutating: true,
			Group: group, Version: version, Resource: "trainjobs", Scope: "Namespaced", TrainJob: true},
		{Name: "validate.trainjobs.trainer.kubeflow.org", Path: ValidateTrainJobPath,
			Group: group, Version: version, Resource: "trainjobs", Scope: "Namespaced", TrainJob: true},
		{Name: "validate.trainingruntimes.trainer.kubeflow.org", Path: ValidateTrainingRuntimePath,
			Group: group, Version: version, Resource: "trainingruntimes", Scope: "Namespaced", TrainJob: true},
		{Name: "validate.clustertrainingruntimes.trainer.kubeflow.org", Path: ValidateClusterTrainingRuntimePath,
			Group: group, Version: version, Resource: "clustertrainingruntimes", Scope: "Cluster", TrainJob: true},
	}
}
