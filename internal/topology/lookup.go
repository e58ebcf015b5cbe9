package topology

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Lookup gathers the ClusterTopologyBinding pcs's constraints name and
// returns Packing's result. It is the package's only read of the API: the
// PodCliqueSet controller (PodGroups, standalone PodCliques, the condition)
// and the PodCliqueScalingGroup controller (grouped PodCliques) both call
// it, so both build from the same packing. A PodCliqueSet without any
// constraint costs no read.
func Lookup(ctx context.Context, c client.Reader, pcs *copsev1alpha1.PodCliqueSet, enabled bool) (Resolved, []Problem, error) {
	if !Constrained(pcs) {
		return Resolved{}, nil, nil
	}
	var binding *copsev1alpha1.ClusterTopologyBinding
	if name := TopologyName(pcs); name != "" && enabled {
		b := &copsev1alpha1.ClusterTopologyBinding{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, b)
		switch {
		case err == nil:
			binding = b
		case !apierrors.IsNotFound(err):
			return Resolved{}, nil, fmt.Errorf("get ClusterTopologyBinding %s named by PodCliqueSet %s/%s: %w", name, pcs.Namespace, pcs.Name, err)
		}
	}
	resolved, problems := Packing(pcs, binding, enabled)
	return resolved, problems, nil
}
