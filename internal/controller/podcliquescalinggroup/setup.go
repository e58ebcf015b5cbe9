package podcliquescalinggroup

import (
	"context"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/requeue"
)

// SetupWithManager registers the controller. It owns every row of the
// group's table: a PodClique's status change can change the group's
// availability, while of the kinds that make no pods (its claims) only a
// creation or a deletion matters (one deleted from outside is made again),
// not their status changes as pods are scheduled. A PodCliqueSet's new spec
// or generation hash is what the group's PodCliques and update status
// follow.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueScalingGroup{}).
		Watches(&copsev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(r.groupsOf), builder.WithPredicates(templateChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	for _, row := range blueprint.GroupResources() {
		if row.MakesPods {
			b = b.Owns(row.NewObject())
			continue
		}
		b = b.Owns(row.NewObject(), builder.WithPredicates(requeue.CreationsAndDeletions()))
	}
	return b.Complete(r)
}

// groupsOf maps a PodCliqueSet to its PodCliqueScalingGroups.
func (r *Reconciler) groupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	return requeue.RequestsForList(ctx, r.Client, &copsev1alpha1.PodCliqueScalingGroupList{}, obj, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabelsSelector{Selector: labels.SelectPodCliqueSet(obj.GetName())})
}

// templateChanged passes PodCliqueSet updates with a new spec or a new
// generation hash.
func templateChanged() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesOnly, func(old, cur *copsev1alpha1.PodCliqueSet) bool {
		return old.Generation != cur.Generation || !ptr.Equal(old.Status.CurrentGenerationHash, cur.Status.CurrentGenerationHash)
	})
}
