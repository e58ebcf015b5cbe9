package podcliqueset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/topology"
)

// topologyDisabled is the rule a topologyConstraint breaks while the
// operator does not apply them.
const topologyDisabled = "topology-aware scheduling is disabled in the operator configuration (topologyAwareScheduling.enabled)"

// ValidateTopology returns the rules a new PodCliqueSet's topologyConstraints
// break. enabled says whether the operator applies them
// (topologyAwareScheduling.enabled with the Workload API scheduler
// backend); binding is the ClusterTopologyBinding topology.TopologyName(pcs)
// names, nil when it does not exist. Every problem topology.Resolve finds is
// an error: an unknown topologyName, a missing one, a domain the binding
// lacks, a child broader than its parent, a preferred domain broader than
// the required one. Only creations are checked: the constraints are
// immutable, and a binding changed later is reported on the PodCliqueSet's
// TopologyLevelsUnavailable condition, not by refusing unrelated updates.
func ValidateTopology(pcs *copsev1alpha1.PodCliqueSet, binding *copsev1alpha1.ClusterTopologyBinding, enabled bool) field.ErrorList {
	var errs field.ErrorList
	if !enabled {
		for _, path := range topology.ConstraintPaths(pcs) {
			errs = append(errs, field.Forbidden(path, topologyDisabled))
		}
		return errs
	}
	_, problems := topology.Resolve(pcs, binding)
	return problemErrors(problems)
}

// validateTopology reads the binding the PodCliqueSet names, as the
// controllers do (topology.Lookup), and turns every problem into a field
// error; so is packing Kueue cannot express (kueue.TopologyRequests) for a
// PodCliqueSet queued through Kueue, which the Kueue Workload controller
// would otherwise only report on its Admitted condition after creation. A
// PodCliqueSet without constraints costs no read. The binding is
// read from the API server (Reader), so that one created a moment ago is
// found; a failed read is an internal error, never an admission.
func (v Validator) validateTopology(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (field.ErrorList, error) {
	if !topology.Constrained(pcs) {
		return nil, nil
	}
	if !v.TopologyAwareScheduling {
		return ValidateTopology(pcs, nil, false), nil
	}
	if v.Reader == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("no API reader to read the ClusterTopologyBinding of PodCliqueSet %s/%s", pcs.Namespace, pcs.Name))
	}
	packing, problems, err := topology.Lookup(ctx, v.Reader, nil, pcs, true)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs := problemErrors(problems)
	if len(errs) == 0 && v.KueueEnabled && kueue.QueueName(pcs) != "" {
		_, errs = kueue.TopologyRequests(pcs, packing)
	}
	return errs, nil
}

func problemErrors(problems []topology.Problem) field.ErrorList {
	var errs field.ErrorList
	for _, p := range problems {
		errs = append(errs, p.Err)
	}
	return errs
}
