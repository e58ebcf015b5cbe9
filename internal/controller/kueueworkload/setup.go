package kueueworkload

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
)

// SetupWithManager registers the controller. It reacts to PodCliqueSets
// that carry the queue label, or carried it before an update, or still
// carry the Admitted condition (one that left its queue, until its Workload
// is gone), to their whole status (phase, startTime, availability: the pods
// going away after a suspension), to every change of the Workloads they
// control, Kueue's admissions and evictions among them, and the garbage
// collector's deletion of a Workload whose PodCliqueSet is gone (the
// request names the PodCliqueSet, which the reconciler does not find; it
// releases the Workload), and to a change of a ClusterTopologyBinding
// their constraints name (their pod sets' topology requests). ResourceFlavors, WorkloadPriorityClasses and
// PriorityClasses are read, not watched: a pass waiting for a missing one
// retries on its own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueSet{}, builder.WithPredicates(queued())).
		Owns(&kueuev1beta2.Workload{}).
		Watches(&copsev1alpha1.ClusterTopologyBinding{}, handler.EnqueueRequestsFromMapFunc(r.queuedNaming)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(r)
}

// queued passes the events of PodCliqueSets with the queue label or the
// Admitted condition, and the update that removes the label.
func queued() predicate.Funcs {
	tracked := func(obj client.Object) bool {
		pcs, ok := obj.(*copsev1alpha1.PodCliqueSet)
		return ok && kueue.Tracked(pcs)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return tracked(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return tracked(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return tracked(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return tracked(e.ObjectOld) || tracked(e.ObjectNew) },
	}
}
