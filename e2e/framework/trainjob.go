package framework

import trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"

// RuntimePatchPod is the pod template patch of one replicated job in the
// TrainJob's runtime patch of manager (one patch per manager), both added if
// missing, for a spec to fill in before it creates or updates the TrainJob.
func RuntimePatchPod(tj *trainerv1alpha1.TrainJob, manager, job string) *trainerv1alpha1.PodTemplatePatch {
	var patch *trainerv1alpha1.RuntimePatch
	for i := range tj.Spec.RuntimePatches {
		if tj.Spec.RuntimePatches[i].Manager == manager {
			patch = &tj.Spec.RuntimePatches[i]
		}
	}
	if patch == nil {
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, trainerv1alpha1.RuntimePatch{
			Manager: manager,
			TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
				Spec: &trainerv1alpha1.JobSetSpecPatch{},
			}},
		})
		patch = &tj.Spec.RuntimePatches[len(tj.Spec.RuntimePatches)-1]
	}
	spec := patch.TrainingRuntimeSpec.Template.Spec
	for i := range spec.ReplicatedJobs {
		if spec.ReplicatedJobs[i].Name == job {
			return spec.ReplicatedJobs[i].Template.Spec.Template
		}
	}
	spec.ReplicatedJobs = append(spec.ReplicatedJobs, trainerv1alpha1.ReplicatedJobPatch{
		Name: job,
		Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
			Template: &trainerv1alpha1.PodTemplatePatch{},
		}},
	})
	return spec.ReplicatedJobs[len(spec.ReplicatedJobs)-1].Template.Spec.Template
}
