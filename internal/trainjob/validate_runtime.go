package trainjob

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// shortTTLSeconds: a TTL below a minute deletes a finished TrainJob before
// anyone can read why it ended (KEP-2899 warns about it).
const shortTTLSeconds = 60

// stepContainers is the container each TrainJob step's job must have.
var stepContainers = map[string]string{
	AncestorTrainer:            NodeName,
	AncestorDatasetInitializer: DatasetInitializerName,
	AncestorModelInitializer:   ModelInitializerName,
}

// ValidateRuntime checks a runtime's template as Kubeflow Trainer's admission
// does: a job that runs a TrainJob step (trainer, dataset-initializer,
// model-initializer) runs one Job and has the step's container. A runtime
// with backend PodCliqueSet is also refused what that backend cannot express
// (PodCliqueSetRefusals).
func ValidateRuntime(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	var errs field.ErrorList
	if BackendOf(spec) == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		errs = append(errs, PodCliqueSetRefusals(spec)...)
	}
	jobsPath := field.NewPath("spec", "template", "spec", "replicatedJobs")
	for i, rjob := range spec.Template.Spec.ReplicatedJobs {
		step, ok := rjob.Template.Labels[AncestorLabel]
		container, known := stepContainers[step]
		if !ok || !known {
			continue
		}
		if rjob.Replicas != 1 {
			errs = append(errs, field.Invalid(jobsPath.Index(i).Child("replicas"), rjob.Replicas, "always must be 1"))
		}
		if !slices.ContainsFunc(rjob.Template.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == container }) {
			errs = append(errs, field.Invalid(jobsPath.Index(i).Child("template", "spec", "template", "spec", "containers"),
				containerNames(rjob.Template.Spec.Template.Spec.Containers), fmt.Sprintf("must contain the required container for the ancestor: %s", step)))
		}
	}
	return errs
}

// RuntimeWarnings are what admission warns about a runtime: a TTL so short
// that a finished TrainJob is gone before anyone reads its outcome.
func RuntimeWarnings(spec *trainerv1alpha1.TrainingRuntimeSpec) []string {
	if ttl := spec.TTLSecondsAfterFinished; ttl != nil && *ttl < shortTTLSeconds {
		return []string{fmt.Sprintf("spec.ttlSecondsAfterFinished is %ds: finished TrainJobs of this runtime are deleted, with their JobSet and logs, less than a minute after they end", *ttl)}
	}
	return nil
}

func containerNames(containers []corev1.Container) []string {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	return names
}
