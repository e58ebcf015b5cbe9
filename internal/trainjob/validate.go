package trainjob

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

var (
	runtimeRefPath     = field.NewPath("spec", "runtimeRef")
	runtimePatchesPath = field.NewPath("spec", "runtimePatches")
	trainerPath        = field.NewPath("spec", "trainer")
)

// Validate checks a TrainJob against its runtime, as Kubeflow Trainer's
// admission does: the initializers it overrides exist in the runtime, its
// runtime patches name jobs and containers that exist, it sets no variable
// its ML policy owns, the ML policy's own rules hold, and a Volcano queue it
// names is not empty (validateVolcano). The plan is
// NewPlan's, before any ML policy step.
func Validate(p *Plan) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateInitializers(p)...)
	errs = append(errs, validateRuntimePatches(p)...)
	errs = append(errs, validateVolcano(p)...)
	if p.MLPolicy == nil {
		return errs
	}
	trainer := p.TrainJob.Spec.Trainer
	switch {
	case p.MLPolicy.Torch != nil:
		errs = append(errs, validateEnvInjection(p)...)
		if trainer != nil {
			errs = append(errs, reservedEnv(trainer, "torch")...)
			if isTorchTune(trainer.Command) {
				errs = append(errs, validateTorchTune(p)...)
			}
		}
	case p.MLPolicy.MPI != nil:
		if trainer != nil && ptr.Deref(trainer.NumNodes, 1) >= 2 && p.runLauncherAsNode() &&
			(p.PodSetNamed(LauncherName) == nil || p.PodSetNamed(NodeName) == nil) {
			errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), *trainer.NumNodes,
				"must be 1 when the MPI runtime runs the launcher as a node but lacks the launcher or the node job"))
		}
		if trainer != nil {
			errs = append(errs, reservedEnv(trainer, "mpi")...)
		}
	case p.MLPolicy.XGBoost != nil:
		if trainer != nil {
			for i, env := range trainer.Env {
				if slices.Contains(ReservedEnv["xgboost"], env.Name) {
					errs = append(errs, field.Forbidden(trainerPath.Child("env").Index(i), env.Name+" is reserved for the XGBoost runtime"))
				}
			}
		}
	case p.MLPolicy.Flux != nil:
		procs := p.MLPolicy.Flux.NumProcPerNode
		if trainer != nil && trainer.NumProcPerNode != nil {
			procs = trainer.NumProcPerNode
		}
		if procs != nil && *procs < 1 {
			errs = append(errs, field.Invalid(trainerPath.Child("numProcPerNode"), *procs, "must be greater than or equal to 1 for Flux TrainJob"))
		}
	}
	return errs
}

// validateInitializers: an initializer the TrainJob overrides must exist in
// the runtime, with its container and the volume mount it fills.
func validateInitializers(p *Plan) field.ErrorList {
	var errs field.ErrorList
	init := p.TrainJob.Spec.Initializer
	if init == nil {
		return nil
	}
	check := func(set bool, name, what string) {
		if !set {
			return
		}
		podSet := p.PodSetNamed(name)
		if podSet == nil {
			errs = append(errs, field.Invalid(runtimeRefPath, p.TrainJob.Spec.RuntimeRef, fmt.Sprintf("must have %s job when trainJob is configured with input %s", name, what)))
			return
		}
		c := p.container(podSet, name)
		if c == nil {
			errs = append(errs, field.Invalid(runtimeRefPath, p.TrainJob.Spec.RuntimeRef, fmt.Sprintf("must have container with name - %s in the %s job", name, name)))
			return
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == InitializerVolumeName }) {
			errs = append(errs, field.Invalid(runtimeRefPath, p.TrainJob.Spec.RuntimeRef, fmt.Sprintf("must have volumeMount with name - %s in container %s of the %s job", InitializerVolumeName, name, name)))
		}
	}
	check(init.Dataset != nil, DatasetInitializerName, "datasetConfig")
	check(init.Model != nil, ModelInitializerName, "modelConfig")
	return errs
}

// validateRuntimePatches: each manager is a domain-prefixed path, and a patch
// names replicated jobs and containers of the runtime (as the runtime has
// them, before the patches) and sets no env of the containers whose env the
// TrainJob's trainer and initializer own.
func validateRuntimePatches(p *Plan) field.ErrorList {
	var errs field.ErrorList
	patches := p.TrainJob.Spec.RuntimePatches
	for i, patch := range patches {
		errs = append(errs, validation.IsDomainPrefixedPath(runtimePatchesPath.Index(i).Child("manager"), patch.Manager)...)
		if patch.TrainingRuntimeSpec == nil || patch.TrainingRuntimeSpec.Template == nil || patch.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		for _, jobPatch := range patch.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			runtimePod := p.runtimePodSpec(jobPatch.Name)
			if runtimePod == nil {
				errs = append(errs, field.Invalid(runtimePatchesPath, patches, fmt.Sprintf("must not have replicatedJob that doesn't exist in the runtime: %s", jobPatch.Name)))
				continue
			}
			if jobPatch.Template == nil || jobPatch.Template.Spec == nil || jobPatch.Template.Spec.Template == nil || jobPatch.Template.Spec.Template.Spec == nil {
				continue
			}
			spec := jobPatch.Template.Spec.Template.Spec
			for _, c := range spec.InitContainers {
				if !hasContainer(runtimePod, c.Name) {
					errs = append(errs, field.Invalid(runtimePatchesPath, patches, fmt.Sprintf("must not have initContainer that doesn't exist in the runtime job %s", jobPatch.Name)))
				}
			}
			for _, c := range spec.Containers {
				switch {
				case !hasContainer(runtimePod, c.Name):
					errs = append(errs, field.Invalid(runtimePatchesPath, patches, fmt.Sprintf("must not have container that doesn't exist in the runtime job %s", jobPatch.Name)))
				case len(c.Env) > 0 && (c.Name == DatasetInitializerName || c.Name == ModelInitializerName || c.Name == NodeName):
					errs = append(errs, field.Invalid(runtimePatchesPath, patches, fmt.Sprintf("must not have envs for the %s, %s, %s containers", DatasetInitializerName, ModelInitializerName, NodeName)))
				}
			}
		}
	}
	return errs
}

// validateEnvInjection: every torch envInjection target exists.
func validateEnvInjection(p *Plan) field.ErrorList {
	var errs field.ErrorList
	if p.MLPolicy.Torch.EnvInjection == nil {
		return nil
	}
	for _, target := range p.MLPolicy.Torch.EnvInjection.Targets {
		for _, name := range target.ContainerNames {
			if p.container(p.PodSetNamed(target.JobName), name) == nil {
				errs = append(errs, field.Invalid(runtimeRefPath, target, fmt.Sprintf("envInjection target podSet %q container %q not found in runtime template", target.JobName, name)))
			}
		}
	}
	return errs
}

// reservedEnv refuses the trainer env names an ML policy owns.
func reservedEnv(trainer *trainerv1alpha1.Trainer, policy string) field.ErrorList {
	var found []string
	for _, env := range trainer.Env {
		if slices.Contains(ReservedEnv[policy], env.Name) && !slices.Contains(found, env.Name) {
			found = append(found, env.Name)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return field.ErrorList{field.Invalid(trainerPath.Child("env"), trainer.Env, fmt.Sprintf("must not have reserved envs, invalid envs configured: [%s]", strings.Join(found, " ")))}
}
