// Package clustertopologybinding holds the ClusterTopologyBinding
// controller: it reports, in the binding's Ready condition, whether every
// level's node label key is carried by at least one node, and warns when a
// binding becomes unusable. It re-checks every binding when a node's labels
// change, a node appears or a node goes away. With the Kueue integration on,
// it also mirrors each binding into a Kueue Topology of the same name
// (kueue_topology.go) and reports the sync in KueueTopologySynced.
package clustertopologybinding

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/requeue"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "clustertopologybinding"

// Reconciler reconciles ClusterTopologyBindings.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Kueue: the operator configuration's kueue.enabled; each binding is
	// mirrored into a Kueue Topology.
	Kueue bool
}

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=topologies,verbs=get;list;watch;create;delete

// Reconcile writes the binding's status from the label keys of the nodes
// and, with Kueue on, from the sync of its Kueue Topology, and records the
// transitions (LevelsUnavailable, the Kueue Topology's).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("clustertopologybinding", req.Name)
	ctx = log.IntoContext(ctx, logger)

	binding := &copsev1alpha1.ClusterTopologyBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, binding); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !binding.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Only the nodes' metadata is read (and cached): labels are all this
	// controller needs, and node status heartbeats would otherwise fill
	// the cache with data nobody reads.
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Client.List(ctx, nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("list nodes for ClusterTopologyBinding %s: %w", req.Name, err)
	}

	var kueueSync *kueueTopologyPlan
	if r.Kueue {
		plan, err := r.syncKueueTopology(ctx, binding)
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The cache has not seen the Topology this controller made.
				return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
			}
			return ctrl.Result{}, err
		}
		kueueSync = &plan
	}

	previous := *binding.Status.DeepCopy()
	status := computeStatus(binding, labelKeys(nodes.Items), kueueSync)
	var events []transitionEvent
	if kueueSync != nil {
		events = kueueTopologyEvents(previous.Conditions, *kueueSync)
	}
	if apiequality.Semantic.DeepEqual(previous, status) {
		r.record(binding, events)
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(binding.DeepCopy(), client.MergeFromWithOptimisticLock{})
	binding.Status = status
	if err := r.Client.Status().Patch(ctx, binding, patch); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
		}
		return ctrl.Result{}, fmt.Errorf("write status of ClusterTopologyBinding %s: %w", req.Name, err)
	}
	r.record(binding, append(events, transitionEvents(previous, status)...))
	logger.V(1).Info("wrote status", "conditions", status.Conditions)
	return ctrl.Result{}, nil
}

func (r *Reconciler) record(binding *copsev1alpha1.ClusterTopologyBinding, events []transitionEvent) {
	for _, e := range events {
		r.Recorder.Eventf(binding, nil, e.eventType, e.reason, e.action, "%s", e.message)
	}
}

// SetupWithManager registers the controller. Nodes are watched as metadata
// only; a node's creation, deletion or label change re-checks every
// binding, its other updates (status heartbeats) do not.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.ClusterTopologyBinding{}).
		WatchesMetadata(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allBindings),
			// Creations and deletions pass; an update only when labels differ.
			builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if r.Kueue {
		// A Topology wakes the binding of its name, whoever made it: a
		// foreign one that goes away lets copse make its own, and the old
		// one of a replacement going away lets copse make the new one.
		b = b.Watches(&kueuev1beta2.Topology{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, t client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: t.GetName()}}}
			}))
	}
	return b.Complete(r)
}

// allBindings maps a node event to every binding.
func (r *Reconciler) allBindings(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &copsev1alpha1.ClusterTopologyBindingList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "list ClusterTopologyBindings for a node change")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i, b := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKey{Name: b.Name}}
	}
	return out
}
