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
// PodCliqueSet controller (PodGroups, standalone PodCliques, the condition),
// the PodCliqueScalingGroup controller (grouped PodCliques), the Kueue
// Workload controller and the PodCliqueSet webhook all call it, so all build
// from the same packing. A PodCliqueSet without any constraint costs no
// read.
//
// cached is read first (a controller's informer cache). A binding it does
// not hold is read again from live (the API server), when live is not nil:
// a binding created a moment before the PodCliqueSet (which the webhook,
// reading the API server, admitted against it) may not have reached the
// cache yet, and packing resolved without it would be left off the gang's
// PodGroup for good, its topology constraint being immutable. Only a binding
// the API server does not have either is reported missing.
func Lookup(ctx context.Context, cached, live client.Reader, pcs *copsev1alpha1.PodCliqueSet, enabled bool) (Resolved, []Problem, error) {
	if !Constrained(pcs) {
		return Resolved{}, nil, nil
	}
	var binding *copsev1alpha1.ClusterTopologyBinding
	if name := TopologyName(pcs); name != "" && enabled {
		b := &copsev1alpha1.ClusterTopologyBinding{}
		err := cached.Get(ctx, client.ObjectKey{Name: name}, b)
		if apierrors.IsNotFound(err) && live != nil {
			err = live.Get(ctx, client.ObjectKey{Name: name}, b)
		}
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
