package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/requeue"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "podclique"

// SetupWithManager registers the controller. Fields left nil are taken from
// the manager (Client, Scheme, Recorder, APIReader) or created (Expectations,
// Clock).
//
// PodCliques are watched for spec and label changes and deletion: the
// controller's own status writes need no reconcile. Pod events reach the
// PodClique named by the pod's label, so a pod whose PodClique is gone still
// gets its finalizer released. A PodCliqueSet change that can change
// whether its replicas may get pods (lifecycle.MayCreatePodsChanged) reaches
// all its PodCliques: the cache may show a new PodClique before the status
// that lets it have pods, and nothing else would wake it. A change of a
// ResourceQuota or LimitRange ends the creation back-off of the namespace's
// refused cliques. A ResourceClaim of resourceSharing created or deleted
// reaches the PodCliques whose pods may wait for it or that own it. A
// PodClique that becomes Ready, stops being Ready or
// succeeds reaches the other PodCliques of its replica and attempt, whose
// start order (startup gate, startsAfterSucceeded) may depend on it.
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
	r.once.Do(r.init)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodClique{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted()))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToPodClique)).
		Watches(&copsev1alpha1.PodClique{}, handler.EnqueueRequestsFromMapFunc(r.siblingsOf), builder.WithPredicates(startOrderSignalChanged())).
		Watches(&copsev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(r.cliquesOf), builder.WithPredicates(mayCreatePodsChanged())).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.refusedCliques), builder.WithPredicates(quotaLoosened())).
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(r.refusedCliques), builder.WithPredicates(limitsChanged())).
		Watches(&resourcev1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(r.claimToCliques), builder.WithPredicates(claimCreatedOrDeleted())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// init fills what a Reconciler built without SetupWithManager (tests) needs.
func (r *Reconciler) init() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.history == nil {
		r.history = newCreationHistory()
	}
}

// podToPodClique maps a pod to the PodClique its label names, so that pods
// of a deleted PodClique reach a reconcile that releases their finalizers.
func podToPodClique(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[labels.PodCliqueKey]
	if name == "" || obj.GetLabels()[labels.ManagedByKey] != labels.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// cliquesOf maps a PodCliqueSet to its PodCliques, by their part-of label.
func (r *Reconciler) cliquesOf(ctx context.Context, obj client.Object) []reconcile.Request {
	return requeue.RequestsForList(ctx, r.Client, &copsev1alpha1.PodCliqueList{}, obj, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{labels.PartOfKey: obj.GetName()})
}

// mayCreatePodsChanged passes the PodCliqueSet updates after which a
// PodClique may get pods it was refused, or must stop getting them, and
// those with a new generation hash (the PodCliques' update status follows
// it).
func mayCreatePodsChanged() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesOnly, func(old, cur *copsev1alpha1.PodCliqueSet) bool {
		return lifecycle.MayCreatePodsChanged(old, cur) || !ptr.Equal(old.Status.CurrentGenerationHash, cur.Status.CurrentGenerationHash)
	})
}

// refusedCliques ends the creation back-off in the object's namespace
// (creationHistory.loosen) and returns the cliques there that the API
// server refuses pods (PodCreationRefused), so they try again at once.
func (r *Reconciler) refusedCliques(ctx context.Context, obj client.Object) []reconcile.Request {
	r.history.loosen(obj.GetNamespace(), r.Clock.Now())
	var cliques copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the PodCliques refused pods", "namespace", obj.GetNamespace())
		return nil
	}
	var out []reconcile.Request
	for i := range cliques.Items {
		if meta.IsStatusConditionTrue(cliques.Items[i].Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cliques.Items[i])})
		}
	}
	return out
}

// deletionStarted passes the update that gives a PodClique its deletion
// timestamp, so its pods' finalizers are released at once.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	}}
}

// quotaLoosened passes ResourceQuota changes that may let a refused pod in:
// a changed limit, less usage, or the quota's deletion. Usage grows with
// every pod created in the namespace; those updates cannot help and pass
// nothing.
func quotaLoosened() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesAndDeletions, func(old, cur *corev1.ResourceQuota) bool {
		if !equality.Semantic.DeepEqual(old.Spec, cur.Spec) {
			return true
		}
		for name, was := range old.Status.Used {
			if now, ok := cur.Status.Used[name]; !ok || now.Cmp(was) < 0 {
				return true
			}
		}
		return false
	})
}

// limitsChanged passes LimitRange changes of their limits and deletions.
func limitsChanged() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesAndDeletions, func(old, cur *corev1.LimitRange) bool {
		return !equality.Semantic.DeepEqual(old.Spec, cur.Spec)
	})
}

// siblingsOf maps a PodClique to the other PodCliques of its replica and
// attempt, whose start order may depend on it.
func (r *Reconciler) siblingsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[labels.PartOfKey] == "" || l[labels.ReplicaKey] == "" {
		return nil
	}
	var list copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{
		labels.PartOfKey: l[labels.PartOfKey], labels.ReplicaKey: l[labels.ReplicaKey], labels.AttemptKey: l[labels.AttemptKey],
	}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the sibling PodCliques of a PodClique", "podClique", client.ObjectKeyFromObject(obj))
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Name != obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
