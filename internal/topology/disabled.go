package topology

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// DisabledMessage says why no constraint is applied while topology-aware
// scheduling is off.
const DisabledMessage = "topology-aware scheduling is off: the operator configuration's topologyAwareScheduling.enabled " +
	"is false or the scheduler backend is not workload, so no pack constraint is applied"

// Disabled lists one problem per scope that sets a topologyConstraint, for
// a PodCliqueSet whose constraints cannot be applied at all because
// topology-aware scheduling is off. Nil when it sets none.
func Disabled(pcs *copsev1alpha1.PodCliqueSet) []Problem {
	var out []Problem
	for _, path := range ConstraintPaths(pcs) {
		out = append(out, Problem{Reason: copsev1alpha1.ReasonTopologyAwareSchedulingDisabled,
			Err: field.Forbidden(path, DisabledMessage)})
	}
	return out
}

// Packing is what a controller applies: Resolve when topology-aware
// scheduling is on, else no packing and the Disabled problems. binding is
// the ClusterTopologyBinding named by TopologyName(pcs), nil when missing.
func Packing(pcs *copsev1alpha1.PodCliqueSet, binding *copsev1alpha1.ClusterTopologyBinding, enabled bool) (Resolved, []Problem) {
	if !enabled {
		return Resolved{}, Disabled(pcs)
	}
	return Resolve(pcs, binding)
}
