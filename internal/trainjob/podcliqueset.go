package trainjob

import (
	"maps"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
)

// PodCliqueSetObjects is what the PodCliqueSet backend applies for a
// TrainJob. There is no Workload: the PodCliqueSet controller makes the
// gangs.
type PodCliqueSetObjects struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	// Plan is what the objects were built from.
	Plan *Plan
	// MPIHostfile is set for MPI runtimes.
	MPIHostfile *corev1.ConfigMap
	// NeedsMPISSHSecret: the TrainJob's pods mount an SSH Secret that
	// BuildMPISSHSecret makes once.
	NeedsMPISSHSecret bool
}

// PlanPodCliqueSet runs every step of the pipeline for the PodCliqueSet
// backend, up to the emission. A template that asks for what a PodCliqueSet
// cannot do is refused with an UnsupportedError naming the fields (the
// TrainJob fails with TrainingRuntimeNotSupported). The pod group policy step
// is skipped: podGroupPolicy.workload says "gang", and a PodCliqueSet always
// gangs its pods itself; the replica's packing comes from topology: its
// topologyConstraint.level resolved against the ClusterTopologyBindings
// (ResolveTopologyLevel; a level no binding has is a
// TopologyUnresolvedError), or the existing PodCliqueSet's kept.
func PlanPodCliqueSet(trainJob *trainerv1alpha1.TrainJob, runtime Runtime, topology TopologySource) (*Plan, error) {
	plan, err := NewPlan(trainJob, runtime)
	if err != nil {
		return nil, err
	}
	if errs := podCliqueSetRefusals(&plan.Spec, plan.PodGroupPolicy); len(errs) > 0 {
		return nil, &UnsupportedError{Reason: errs.ToAggregate().Error()}
	}
	if plan.TopologyConstraint, err = topology.topologyConstraint(topologyLevel(plan.PodGroupPolicy), runtime); err != nil {
		return nil, err
	}
	if err := ApplyMLPolicy(plan); err != nil {
		return nil, err
	}
	NamePodCliqueSetPods(plan)
	return plan, nil
}

// BuildPodCliqueSetObjects builds the PodCliqueSet backend's objects for a
// TrainJob; bindings are the cluster's ClusterTopologyBindings.
func BuildPodCliqueSetObjects(trainJob *trainerv1alpha1.TrainJob, runtime Runtime, bindings []copsev1alpha1.ClusterTopologyBinding) (*PodCliqueSetObjects, error) {
	plan, err := PlanPodCliqueSet(trainJob, runtime, ResolveTopologyAgainst(bindings))
	if err != nil {
		return nil, err
	}
	return PodCliqueSetObjectsOf(plan), nil
}

// PodCliqueSetObjectsOf emits the PodCliqueSet backend's objects of a
// finished plan.
func PodCliqueSetObjectsOf(plan *Plan) *PodCliqueSetObjects {
	objects := &PodCliqueSetObjects{PodCliqueSet: BuildPodCliqueSet(plan), Plan: plan}
	if plan.MLPolicy != nil && plan.MLPolicy.MPI != nil {
		objects.MPIHostfile = BuildMPIHostfile(plan)
		objects.NeedsMPISSHSecret = true
	}
	return objects
}

// BuildPodCliqueSet is the PodCliqueSet backend's last step: one Training
// PodCliqueSet named as its TrainJob, controlled by it, suspended as it is,
// with one replica and one clique per replicated job (named after it). Each
// clique runs PodSet.Count pods, all needed (minAvailable), from the very pod
// template the JobSet backend would give the job's pods (BuildJobSet makes
// it: overrides, env, volumes, runtime patches); the Job template's labels
// and annotations go on the clique, under the pod template's.
//
// The JobSet's policies become the PodCliqueSet's: failurePolicy.maxRestarts
// is trainingSpec.maxRestarts, restartStrategy InPlaceRestart is
// trainingSpec.restartStrategy InPlace; its rules and the Jobs' podFailurePolicy are
// trainingSpec.failurePolicy.rules (failureRulesFrom); successPolicy is trainingSpec.successPolicy
// with the replicated jobs as target cliques; startupPolicy InOrder is
// cliqueStartupType InOrder; dependsOn Ready is cliqueStartupType Explicit
// with startsAfter, and dependsOn Complete is trainingSpec.startsAfterSucceeded;
// network.publishNotReadyAddresses is the headless Service's; the resolved
// topology level packs the replica (spec.template.topologyConstraint), whose
// base gang holds the trainer. What has no equivalent is refused before
// (podCliqueSetRefusals).
func BuildPodCliqueSet(p *Plan) *copsev1alpha1.PodCliqueSet {
	jobSet := BuildJobSet(p)
	training := &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
	if fp := p.Spec.FailurePolicy; fp != nil {
		training.MaxRestarts = ptr.To(fp.MaxRestarts)
		if fp.RestartStrategy == jobsetv1alpha2.InPlaceRestart {
			// JobSet's in-place restart (KEP-467) is copse's: healthy pods
			// restart where they run, behind a barrier; the rest are made anew.
			training.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
		}
	}
	if rules, _ := failureRulesFrom(&jobSet.Spec, field.NewPath("spec")); len(rules) > 0 {
		training.FailurePolicy = &copsev1alpha1.TrainingFailurePolicy{Rules: rules}
	}
	if sp := p.Spec.SuccessPolicy; sp != nil {
		training.SuccessPolicy = &copsev1alpha1.SuccessPolicy{
			Operator:      copsev1alpha1.SuccessPolicyOperator(sp.Operator),
			TargetCliques: append([]string(nil), sp.TargetReplicatedJobs...),
		}
	}
	template := grovecorev1alpha1.PodCliqueSetTemplateSpec{}
	explicit := false
	for i, rjob := range jobSet.Spec.ReplicatedJobs {
		clique := cliqueOf(rjob, p.PodSets[i].Count)
		var succeeded []string
		for _, dep := range rjob.DependsOn {
			switch dep.Status {
			case jobsetv1alpha2.DependencyReady:
				clique.Spec.StartsAfter = append(clique.Spec.StartsAfter, dep.Name)
				explicit = true
			case jobsetv1alpha2.DependencyComplete:
				succeeded = append(succeeded, dep.Name)
			}
		}
		if len(succeeded) > 0 {
			training.StartsAfterSucceeded = append(training.StartsAfterSucceeded,
				copsev1alpha1.CliqueSuccessDependency{Clique: rjob.Name, Cliques: succeeded})
		}
		template.Cliques = append(template.Cliques, clique)
	}
	switch {
	case explicit:
		template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
	case p.Spec.StartupPolicy != nil && p.Spec.StartupPolicy.StartupPolicyOrder == jobsetv1alpha2.InOrder:
		template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
	}
	if p.TopologyConstraint != nil {
		template.TopologyConstraint = p.TopologyConstraint.DeepCopy()
	}
	if network := p.Spec.Network; network != nil && network.PublishNotReadyAddresses != nil {
		template.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: *network.PublishNotReadyAddresses}
	}

	pcs := &copsev1alpha1.PodCliqueSet{
		TypeMeta: metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodCliqueSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.TrainJob.Name,
			Namespace:       p.TrainJob.Namespace,
			Labels:          labels.Merge(notQueued(p.Labels), ownedLabels(p.TrainJob)),
			Annotations:     withMNNVLGroup(p.Annotations, p.TrainJob),
			OwnerReferences: []metav1.OwnerReference{ControllerReference(p.TrainJob)},
		},
		Spec: copsev1alpha1.PodCliqueSetSpec{
			WorkloadType: copsev1alpha1.WorkloadTypeTraining,
			TrainingSpec: training,
			Suspend:      ptr.To(ptr.Deref(p.TrainJob.Spec.Suspend, false)),
		},
	}
	pcs.Spec.Replicas = 1
	pcs.Spec.Template = template
	return pcs
}

// notQueued is the JobSet's labels without Kueue's queue name, which
// Kueue's runtime patch puts there (docs/trainjob.md#kueue): Kueue queues
// the TrainJob and leaves the JobSet of a TrainJob it manages alone, while
// copse would queue a PodCliqueSet with that label on its own.
func notQueued(jobSetLabels map[string]string) map[string]string {
	out := maps.Clone(jobSetLabels)
	delete(out, kueue.QueueNameLabel)
	return out
}

// cliqueOf is the clique of one replicated job of the built JobSet: count
// pods, every one needed, from the Job's pod template.
func cliqueOf(rjob jobsetv1alpha2.ReplicatedJob, count int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	pod := rjob.Template.Spec.Template
	return &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name:        rjob.Name,
		Labels:      labels.Merge(rjob.Template.Labels, pod.Labels),
		Annotations: labels.Merge(rjob.Template.Annotations, pod.Annotations),
		Spec: grovecorev1alpha1.PodCliqueSpec{
			RoleName:     rjob.Name,
			PodSpec:      *pod.Spec.DeepCopy(),
			Replicas:     count,
			MinAvailable: ptr.To(count),
		},
	}
}
