package podclique

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

// observeStartOrder gathers the clique's start order: its predecessors from
// the PodCliqueSet's template, and its siblings from the cache.
func (r *Reconciler) observeStartOrder(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet, id blueprint.CliqueIdentity) (startOrder, error) {
	if pcs == nil {
		return startOrder{}, nil
	}
	groupMinAvailable := blueprint.GroupMinAvailable(pcs)
	scope := startScope(pcs, id, groupMinAvailable)
	in := startOrderInput{
		readyPredecessors:   blueprint.ScopePredecessors(blueprint.GatePredecessors(pcs)[id.Clique], scope, blueprint.CliqueScalingGroups(pcs)),
		successPredecessors: blueprint.SuccessPredecessors(pcs)[id.Clique],
		scope:               scope,
	}
	if len(in.readyPredecessors) == 0 && len(in.successPredecessors) == 0 {
		return startOrder{}, nil
	}
	in.groupMinAvailable = groupMinAvailable
	var list copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &list, client.InNamespace(pclq.Namespace), siblingSelector(id)); err != nil {
		return startOrder{}, fmt.Errorf("listing the PodCliques of replica %d of %s/%s: %w", id.Replica, pclq.Namespace, id.PodCliqueSet, err)
	}
	for i := range list.Items {
		in.siblings = append(in.siblings, siblingOf(&list.Items[i]))
	}
	return decideStartOrder(in), nil
}
