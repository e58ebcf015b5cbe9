package trainjob

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// JobSetObjects is what the JobSet backend applies for a TrainJob.
type JobSetObjects struct {
	JobSet *jobsetv1alpha2.JobSet
	// Workload is set with podGroupPolicy.workload; its PodGroups are
	// built with BuildPodGroups once the Workload exists.
	Workload *schedulingv1beta1.Workload
	// Plan is what the objects were built from.
	Plan *Plan
	// MPIHostfile is set for MPI runtimes.
	MPIHostfile *corev1.ConfigMap
	// NeedsMPISSHSecret: the TrainJob's pods mount an SSH Secret that
	// BuildMPISSHSecret makes once.
	NeedsMPISSHSecret bool
	// SchedulerPodGroup is the coscheduling or Volcano PodGroup of a
	// runtime whose podGroupPolicy names that scheduler
	// (BuildSchedulerPodGroup); it is created before the JobSet whose pods
	// are its members.
	SchedulerPodGroup *unstructured.Unstructured
	// ComputeDomain is the TrainJob's NVIDIA ComputeDomain, set by
	// AddJobSetMNNVL when MNNVL is on and the pods request GPUs; it is
	// created before the JobSet whose pods claim its channel.
	ComputeDomain *unstructured.Unstructured
}

// PlanJobSet runs every step of the pipeline for the JobSet backend, up to
// the emission.
func PlanJobSet(trainJob *trainerv1alpha1.TrainJob, runtime Runtime) (*Plan, error) {
	plan, err := NewPlan(trainJob, runtime)
	if err != nil {
		return nil, err
	}
	if err := ApplyMLPolicy(plan); err != nil {
		return nil, err
	}
	ApplyPodGroupPolicy(plan)
	NameJobSetPods(plan)
	return plan, nil
}

// BuildJobSetObjects builds the JobSet backend's objects for a TrainJob.
func BuildJobSetObjects(trainJob *trainerv1alpha1.TrainJob, runtime Runtime) (*JobSetObjects, error) {
	plan, err := PlanJobSet(trainJob, runtime)
	if err != nil {
		return nil, err
	}
	return JobSetObjectsOf(plan)
}

// JobSetObjectsOf emits the JobSet backend's objects of a finished plan.
func JobSetObjectsOf(plan *Plan) (*JobSetObjects, error) {
	objects := &JobSetObjects{JobSet: BuildJobSet(plan), Workload: BuildWorkload(plan), Plan: plan}
	if plan.MLPolicy != nil && plan.MLPolicy.MPI != nil {
		objects.MPIHostfile = BuildMPIHostfile(plan)
		objects.NeedsMPISSHSecret = true
	}
	var err error
	if objects.SchedulerPodGroup, err = BuildSchedulerPodGroup(plan); err != nil {
		return nil, err
	}
	return objects, nil
}

// TrainerNodes is the number of nodes that train: the trainer step's pods,
// plus the MPI launcher when it trains too.
func TrainerNodes(plan *Plan) int32 {
	if plan.MLPolicy != nil && plan.MLPolicy.MPI != nil {
		nodes := int32(0)
		if node := plan.PodSetNamed(NodeName); node != nil {
			nodes = node.Count
		}
		if plan.runLauncherAsNode() {
			nodes++
		}
		return max(nodes, 1)
	}
	return trainerCount(plan)
}
