package trainjob

import (
	"fmt"

	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// builtObjects are what one backend builds; exactly one is set once the
// build succeeded.
type builtObjects struct {
	jobSet       *trainjob.JobSetObjects
	podCliqueSet *trainjob.PodCliqueSetObjects
}

// any reports whether a backend was built.
func (b builtObjects) any() bool { return b.jobSet != nil || b.podCliqueSet != nil }

// build runs the backend's pipeline; a finished TrainJob builds nothing. A
// runtime the backend cannot run is a
// fact (Unsupported: the TrainJob fails), not an error; so is a topology
// level no ClusterTopologyBinding has (TopologyUnresolved: nothing is built
// until one has it). On the PodCliqueSet backend the packing is resolved
// against the bindings only until the PodCliqueSet exists; from then on its
// own topologyConstraint is kept (trainjob.KeepTopology), so the
// bindings never block a rebuild, a suspension or a resume.
func (r *Reconciler) build(tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime, f *facts) (builtObjects, error) {
	backend := f.Backend
	if finished(tj.Status) {
		return builtObjects{}, nil
	}
	var plan *trainjob.Plan
	var err error
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		plan, err = trainjob.PlanPodCliqueSet(tj, runtime, f.Topology)
	} else {
		plan, err = trainjob.PlanJobSet(tj, runtime)
	}
	switch {
	case trainjob.IsUnsupported(err):
		f.Unsupported = err.Error()
		return builtObjects{}, nil
	case trainjob.IsTopologyUnresolved(err):
		f.TopologyUnresolved = err.Error()
		return builtObjects{}, nil
	case err != nil:
		return builtObjects{}, err
	}
	f.NumNodes = ptr.To(trainjob.TrainerNodes(plan))
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		return builtObjects{podCliqueSet: trainjob.PodCliqueSetObjectsOf(plan)}, nil
	}
	if len(plan.PodGroups) > 0 && !r.WorkloadAPI {
		f.NumNodes = nil
		f.Unsupported = "podGroupPolicy.workload needs the scheduling.k8s.io/v1beta1 Workload API, which this cluster does not serve"
		return builtObjects{}, nil
	}
	if policy, ok := trainjob.SchedulerPodGroupPolicyOf(plan.PodGroupPolicy); ok && !r.SchedulerPodGroups[policy.Kind] {
		f.NumNodes = nil
		f.Unsupported = fmt.Sprintf("%s needs the %s %s, which this cluster does not serve: install its CRD, then restart copse "+
			"(it looks for the kind when it starts)", policy.Field, policy.Kind.Kind, policy.Kind.GroupVersion())
		return builtObjects{}, nil
	}
	objects, err := trainjob.JobSetObjectsOf(plan)
	if err != nil {
		return builtObjects{}, err
	}
	if r.MNNVL {
		trainjob.AddJobSetMNNVL(objects, tj)
	}
	// A JobSet keeps the ComputeDomain it was created with.
	trainjob.KeepJobSetComputeDomain(objects, tj, f.JobSet)
	return builtObjects{jobSet: objects}, nil
}
