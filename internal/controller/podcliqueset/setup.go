package podcliqueset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/scheduler"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "podcliqueset"

// SetupWithManager registers the controller. It reacts to the PodCliqueSet
// and to every object it controls: a scaling group's or PodClique's status
// change can change replica health.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueSet{}).
		Owns(&copsev1alpha1.PodClique{}).
		Owns(&copsev1alpha1.PodCliqueScalingGroup{}).
		Owns(&corev1.Service{}).
		// Pods are watched only for their end: a Training workload fails once
		// its last pod is gone, and succeeds from pods exiting.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToPodCliqueSet),
			builder.WithPredicates(podEnded())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	if r.Backend.Name() == scheduler.BackendWorkload {
		b = b.Owns(&schedulingv1beta1.PodGroup{})
	}
	return b.Complete(r)
}

// podToPodCliqueSet maps a pod to its PodCliqueSet through the part-of label.
func podToPodCliqueSet(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[labels.PartOfKey]
	if name == "" || obj.GetLabels()[labels.ManagedByKey] != labels.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// podEnded passes pod deletions and phase changes, nothing else: the
// PodCliqueSet does not care about a pod's every status update.
func podEnded() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldPod, okOld := e.ObjectOld.(*corev1.Pod)
			newPod, okNew := e.ObjectNew.(*corev1.Pod)
			return okOld && okNew && oldPod.Status.Phase != newPod.Status.Phase
		},
	}
}
