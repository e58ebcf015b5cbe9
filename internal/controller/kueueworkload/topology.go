package kueueworkload

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/topology"
)

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch

// queuedNaming maps a ClusterTopologyBinding to the queued PodCliqueSets
// whose constraints name it: a change of its levels changes their
// Workloads' topology requests.
func (r *Reconciler) queuedNaming(ctx context.Context, binding client.Object) []reconcile.Request {
	var list copsev1alpha1.PodCliqueSetList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "list PodCliqueSets for a ClusterTopologyBinding change", "clusterTopologyBinding", binding.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		pcs := &list.Items[i]
		if kueue.QueueName(pcs) != "" && topology.TopologyName(pcs) == binding.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pcs)})
		}
	}
	return out
}
