// Package clustertopologybinding holds the ClusterTopologyBinding
// controller: it reports, in the binding's Ready condition, whether every
// level's node label key is carried by at least one node, and warns when a
// binding becomes unusable. It re-checks every binding when a node's labels
// change, a node appears or a node goes away.
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

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/requeue"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "clustertopologybinding"

// Reconciler reconciles ClusterTopologyBindings.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile writes the binding's status from the label keys of the nodes
// and records the transition to LevelsUnavailable.
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

	previous := *binding.Status.DeepCopy()
	status := computeStatus(binding, labelKeys(nodes.Items))
	if apiequality.Semantic.DeepEqual(previous, status) {
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
	for _, e := range transitionEvents(previous, status) {
		r.Recorder.Eventf(binding, nil, e.eventType, e.reason, e.action, "%s", e.message)
	}
	logger.V(1).Info("wrote status", "ready", status.Conditions)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller. Nodes are watched as metadata
// only; a node's creation, deletion or label change re-checks every
// binding, its other updates (status heartbeats) do not.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.ClusterTopologyBinding{}).
		WatchesMetadata(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allBindings),
			// Creations and deletions pass; an update only when labels differ.
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
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
