// Package webhook serves copse's admission webhooks: for the grove.io kinds,
// defaulting of PodCliqueSets and validation of PodCliqueSets,
// PodCliqueScalingGroups, PodCliques, ClusterTopologyBindings and the scale
// subresources; for trainer.kubeflow.org, defaulting and validation of
// TrainJobs and validation of TrainingRuntimes and ClusterTrainingRuntimes.
// The rules live in one package per kind; this package only describes the
// endpoints and registers them.
package webhook
