package podclique

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "podclique"

// SetupWithManager registers the controller. Fields left nil are taken from
// the manager (Client, Scheme, Recorder, APIReader) or created (Expectations).
//
// PodCliques are watched for spec and label changes only: the controller's
// own status writes need no reconcile. Pod events reach the PodClique that
// controls the pod.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.Expectations == nil {
		r.Expectations = expectations.New(expectations.Options{
			Logger: mgr.GetLogger().WithName(ControllerName).WithName("expectations"),
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodClique{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}
