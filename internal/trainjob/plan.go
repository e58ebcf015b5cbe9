package trainjob

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// Runtime is a resolved TrainingRuntime or ClusterTrainingRuntime.
type Runtime struct {
	Kind string
	Name string
	Spec trainerv1alpha1.TrainingRuntimeSpec
}

// Plan is what a TrainJob runs, before a backend turns it into objects: the
// runtime's JobSet template with the TrainJob applied, and one PodSet per
// replicated job, in the template's order. Every step edits the plan in place.
type Plan struct {
	// TrainJob is a copy the steps may change (torchtune extends the
	// trainer's command).
	TrainJob *trainerv1alpha1.TrainJob
	// MLPolicy and PodGroupPolicy are copies of the runtime's.
	MLPolicy       *trainerv1alpha1.MLPolicy
	PodGroupPolicy *trainerv1alpha1.PodGroupPolicy
	// Labels and Annotations go on the JobSet: the template's, then the
	// runtime patches'.
	Labels      map[string]string
	Annotations map[string]string
	// Spec is the JobSet spec, edited by every step.
	Spec jobsetv1alpha2.JobSetSpec
	// PodSets describe Spec.ReplicatedJobs, index for index.
	PodSets []PodSet
	// PodLabels and PodAnnotations go on every pod template.
	PodLabels      map[string]string
	PodAnnotations map[string]string
	// PodGroups are the Workload-API pod groups, set by
	// ApplyPodGroupPolicy when the runtime asks for them.
	PodGroups []PodGroupPlan
	// Backend is what the plan is built into (BackendOf the runtime); the
	// ML policies ask it for the pods' network identities.
	Backend trainerv1alpha1.RuntimeBackend
	// TopologyConstraint is the PodCliqueSet backend's packing of the
	// replica, resolved from the runtime's topology level
	// (PlanPodCliqueSet); nil for none.
	TopologyConstraint *grovecorev1alpha1.TopologyConstraint

	// runtimeJobs are the runtime's replicated jobs before any runtime
	// patch: a patch may change only jobs and containers the runtime has,
	// and once merged into Spec it would seem to have them.
	runtimeJobs []jobsetv1alpha2.ReplicatedJob
}

// PodSet is one replicated job's role and size.
type PodSet struct {
	// Name of the replicated job.
	Name string
	// Ancestor is the step its Job template's AncestorLabel names, or "".
	Ancestor string
	// Count is the number of pods of one Job: the trainer's node count for
	// the trainer step, else the Job's parallelism (at least 1).
	Count int32
	// Endpoints are the pods' DNS names, set by the backend's network step.
	Endpoints []string
}

// NewPlan starts the pipeline: it merges the TrainJob's runtime patches into a
// copy of the runtime's template, applies resourcesPerNode to the trainer
// container, and sizes every replicated job.
func NewPlan(trainJob *trainerv1alpha1.TrainJob, runtime Runtime) (*Plan, error) {
	plan := &Plan{
		TrainJob:       trainJob.DeepCopy(),
		MLPolicy:       runtime.Spec.MLPolicy.DeepCopy(),
		PodGroupPolicy: runtime.Spec.PodGroupPolicy.DeepCopy(),
		Backend:        BackendOf(&runtime.Spec),
		Labels:         maps.Clone(runtime.Spec.Template.Labels),
		Annotations:    maps.Clone(runtime.Spec.Template.Annotations),
		Spec:           *runtime.Spec.Template.Spec.DeepCopy(),
		runtimeJobs:    runtime.Spec.Template.Spec.DeepCopy().ReplicatedJobs,
	}
	plan.mergePatchMetadata()
	if err := plan.mergePatchSpecs(); err != nil {
		return nil, err
	}
	for i := range plan.Spec.ReplicatedJobs {
		rjob := &plan.Spec.ReplicatedJobs[i]
		podSet := PodSet{Name: rjob.Name, Count: ptr.Deref(rjob.Template.Spec.Parallelism, 1)}
		if ancestor, ok := rjob.Template.Labels[AncestorLabel]; ok {
			podSet.Ancestor = ancestor
			if ancestor == AncestorTrainer && plan.MLPolicy != nil {
				podSet.Count = ptr.Deref(plan.MLPolicy.NumNodes, 1)
			}
		}
		podSet.Count = max(podSet.Count, 1)
		if plan.takesResourcesPerNode(podSet) {
			if err := applyResourcesPerNode(rjob, *trainJob.Spec.Trainer.ResourcesPerNode); err != nil {
				return nil, fmt.Errorf("replicated job %s: resourcesPerNode: %w", rjob.Name, err)
			}
		}
		plan.PodSets = append(plan.PodSets, podSet)
	}
	return plan, nil
}

// mergePatchMetadata adds the runtime patches' JobSet labels and annotations,
// in patch order, over the template's.
func (p *Plan) mergePatchMetadata() {
	for _, patch := range p.TrainJob.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec == nil || patch.TrainingRuntimeSpec.Template == nil || patch.TrainingRuntimeSpec.Template.Metadata == nil {
			continue
		}
		meta := patch.TrainingRuntimeSpec.Template.Metadata
		if len(meta.Labels) > 0 && p.Labels == nil {
			p.Labels = map[string]string{}
		}
		maps.Copy(p.Labels, meta.Labels)
		if len(meta.Annotations) > 0 && p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		maps.Copy(p.Annotations, meta.Annotations)
	}
}

// mergePatchSpecs merges each runtime patch's JobSet spec into the template
// with a strategic merge patch (lists keyed by name, as the JobSet API
// declares), then restores the template's order of replicated jobs.
func (p *Plan) mergePatchSpecs() error {
	order := map[string]int{}
	for i, rjob := range p.Spec.ReplicatedJobs {
		order[rjob.Name] = i
	}
	for _, patch := range p.TrainJob.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec == nil || patch.TrainingRuntimeSpec.Template == nil || patch.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		original, err := json.Marshal(p.Spec)
		if err != nil {
			return fmt.Errorf("encode the JobSet template: %w", err)
		}
		change, err := json.Marshal(patch.TrainingRuntimeSpec.Template.Spec)
		if err != nil {
			return fmt.Errorf("encode runtime patch %s: %w", patch.Manager, err)
		}
		merged, err := strategicpatch.StrategicMergePatch(original, change, jobsetv1alpha2.JobSetSpec{})
		if err != nil {
			return fmt.Errorf("merge runtime patch %s: %w", patch.Manager, err)
		}
		spec := jobsetv1alpha2.JobSetSpec{}
		if err := json.Unmarshal(merged, &spec); err != nil {
			return fmt.Errorf("decode the template patched by %s: %w", patch.Manager, err)
		}
		p.Spec = spec
	}
	slices.SortStableFunc(p.Spec.ReplicatedJobs, func(a, b jobsetv1alpha2.ReplicatedJob) int {
		return order[a.Name] - order[b.Name]
	})
	return nil
}

// takesResourcesPerNode reports whether a replicated job's node container
// gets the TrainJob's resourcesPerNode: the trainer step's, or with MPI's
// runLauncherAsNode the node job's too.
func (p *Plan) takesResourcesPerNode(podSet PodSet) bool {
	trainer := p.TrainJob.Spec.Trainer
	if trainer == nil || trainer.ResourcesPerNode == nil || p.MLPolicy == nil {
		return false
	}
	if podSet.Ancestor == AncestorTrainer {
		return true
	}
	return p.runLauncherAsNode() && podSet.Name == NodeName
}

func (p *Plan) runLauncherAsNode() bool {
	return p.MLPolicy != nil && p.MLPolicy.MPI != nil && ptr.Deref(p.MLPolicy.MPI.RunLauncherAsNode, false)
}

// applyResourcesPerNode merges resources over the node container's with a
// strategic merge patch: a resource named in both takes the TrainJob's
// quantity, the others stay.
func applyResourcesPerNode(rjob *jobsetv1alpha2.ReplicatedJob, resources corev1.ResourceRequirements) error {
	containers := rjob.Template.Spec.Template.Spec.Containers
	i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == NodeName })
	if i < 0 {
		return nil
	}
	original, err := json.Marshal(containers[i].Resources)
	if err != nil {
		return err
	}
	change, err := json.Marshal(resources)
	if err != nil {
		return err
	}
	merged, err := strategicpatch.StrategicMergePatch(original, change, corev1.ResourceRequirements{})
	if err != nil {
		return err
	}
	out := corev1.ResourceRequirements{}
	if err := json.Unmarshal(merged, &out); err != nil {
		return err
	}
	containers[i].Resources = out
	return nil
}

// TrainerPodSet returns the trainer step's PodSet, or nil.
func (p *Plan) TrainerPodSet() *PodSet {
	return p.podSetWhere(func(ps PodSet) bool { return ps.Ancestor == AncestorTrainer })
}

// PodSetNamed returns the PodSet of a replicated job, or nil.
func (p *Plan) PodSetNamed(name string) *PodSet {
	return p.podSetWhere(func(ps PodSet) bool { return ps.Name == name })
}

func (p *Plan) podSetWhere(match func(PodSet) bool) *PodSet {
	if i := slices.IndexFunc(p.PodSets, match); i >= 0 {
		return &p.PodSets[i]
	}
	return nil
}

// podSpec returns the pod spec of a PodSet's replicated job.
func (p *Plan) podSpec(podSet *PodSet) *corev1.PodSpec {
	for i := range p.Spec.ReplicatedJobs {
		if p.Spec.ReplicatedJobs[i].Name == podSet.Name {
			return &p.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		}
	}
	return nil
}

// container returns a container, or an init container, of a replicated job
// by name, or nil.
func (p *Plan) container(podSet *PodSet, name string) *corev1.Container {
	if podSet == nil {
		return nil
	}
	spec := p.podSpec(podSet)
	if spec == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// runtimePodSpec returns the pod spec of the runtime's replicated job named
// job, before any runtime patch, or nil if the runtime has no such job.
func (p *Plan) runtimePodSpec(job string) *corev1.PodSpec {
	if i := slices.IndexFunc(p.runtimeJobs, func(r jobsetv1alpha2.ReplicatedJob) bool { return r.Name == job }); i >= 0 {
		return &p.runtimeJobs[i].Template.Spec.Template.Spec
	}
	return nil
}

// hasContainer reports whether a pod spec has a container or an init
// container named name.
func hasContainer(spec *corev1.PodSpec, name string) bool {
	named := func(c corev1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(spec.Containers, named) || slices.ContainsFunc(spec.InitContainers, named)
}

// trainerContainer returns the trainer step's node container, or nil.
func (p *Plan) trainerContainer() *corev1.Container {
	return p.container(p.TrainerPodSet(), NodeName)
}

// overrideTrainerNodeCount applies trainer.numNodes to the trainer PodSet.
func (p *Plan) overrideTrainerNodeCount() {
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil && trainer.NumNodes != nil {
		if ps := p.TrainerPodSet(); ps != nil {
			ps.Count = *trainer.NumNodes
		}
	}
}

// resourcesPerNode is what one trainer node requests: the TrainJob's
// resourcesPerNode, else the runtime's trainer node container's resources.
func (p *Plan) resourcesPerNode() corev1.ResourceRequirements {
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil && trainer.ResourcesPerNode != nil {
		return *trainer.ResourcesPerNode
	}
	for i, rjob := range p.Spec.ReplicatedJobs {
		if rjob.Name != NodeName && p.PodSets[i].Ancestor != AncestorTrainer {
			continue
		}
		for _, c := range rjob.Template.Spec.Template.Spec.Containers {
			if c.Name == NodeName && (c.Resources.Limits != nil || c.Resources.Requests != nil) {
				return c.Resources
			}
		}
	}
	return corev1.ResourceRequirements{}
}
