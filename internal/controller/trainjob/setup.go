package trainjob

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// SetupWithManager registers the controller: TrainJobs copse manages, and
// the JobSets, PodCliqueSets, ConfigMaps (snapshot, hostfile) and PodGroups
// (the Workload API's, coscheduling's, Volcano's) they control, so that a JobSet's or PodCliqueSet's progress or an object
// deleted from outside brings the TrainJob back. The PodCliques of a
// PodCliqueSet are watched too (their counts are the TrainJob's jobsStatus);
// one maps to the TrainJob its PodCliqueSet is named after, which the
// reconciler then checks controls it. PodGroups are watched only where the
// cluster serves them. A ClusterTopologyBinding's creation or change wakes
// the TrainJobs waiting for a binding with their topology level. Secrets are
// not watched: copse only ever creates them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&trainerv1alpha1.TrainJob{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			tj, ok := obj.(*trainerv1alpha1.TrainJob)
			return ok && managedHere(tj)
		}))).
		Owns(&jobsetv1alpha2.JobSet{}).
		Owns(&copsev1alpha1.PodCliqueSet{}).
		Watches(&copsev1alpha1.PodClique{}, handler.EnqueueRequestsFromMapFunc(podCliqueToTrainJob)).
		Owns(&corev1.ConfigMap{}).
		Watches(&copsev1alpha1.ClusterTopologyBinding{}, handler.EnqueueRequestsFromMapFunc(r.waitingForTopology)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	if r.WorkloadAPI {
		b = b.Owns(&schedulingv1beta1.PodGroup{})
	}
	for _, kind := range []schema.GroupVersionKind{trainjob.CoschedulingPodGroupKind, trainjob.VolcanoPodGroupKind} {
		if r.SchedulerPodGroups[kind] {
			b = b.Owns(trainjob.NewSchedulerPodGroup(kind))
		}
	}
	return b.Complete(r)
}

// podCliqueToTrainJob maps a PodClique to the TrainJob named as its
// PodCliqueSet (a TrainJob's PodCliqueSet has its name).
func podCliqueToTrainJob(_ context.Context, obj client.Object) []reconcile.Request {
	pcs := obj.GetLabels()[labels.PartOfKey]
	if pcs == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: pcs}}}
}

// waitingForTopology maps a ClusterTopologyBinding event to the TrainJobs
// whose PodCliqueSet waits for a binding with their topology level.
func (r *Reconciler) waitingForTopology(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &trainerv1alpha1.TrainJobList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "list TrainJobs for a ClusterTopologyBinding change")
		return nil
	}
	var out []reconcile.Request
	for _, tj := range list.Items {
		if meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tj)})
		}
	}
	return out
}
