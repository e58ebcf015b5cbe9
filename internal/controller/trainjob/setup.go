package trainjob

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// SetupWithManager registers the controller: TrainJobs copse manages, and
// the JobSets, ConfigMaps (snapshot, hostfile) and PodGroups they control,
// so that a JobSet's progress or an object deleted from outside brings the
// TrainJob back. PodGroups are watched only where the cluster serves them. Secrets are not watched: copse only ever creates them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&trainerv1alpha1.TrainJob{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			tj, ok := obj.(*trainerv1alpha1.TrainJob)
			return ok && managedHere(tj)
		}))).
		Owns(&jobsetv1alpha2.JobSet{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	if r.WorkloadAPI {
		b = b.Owns(&schedulingv1beta1.PodGroup{})
	}
	return b.Complete(r)
}
