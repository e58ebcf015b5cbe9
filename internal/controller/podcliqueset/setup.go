package podcliqueset

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
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
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	if r.Backend.Name() == scheduler.BackendWorkload {
		b = b.Owns(&schedulingv1beta1.PodGroup{})
	}
	return b.Complete(r)
}
