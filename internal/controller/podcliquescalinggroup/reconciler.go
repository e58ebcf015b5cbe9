// Package podcliquescalinggroup holds the PodCliqueScalingGroup controller:
// for each replica j of a scaling group it keeps one PodClique per member
// clique; it recreates a group replica whose clique stayed breached for
// longer than terminationDelay while the group as a whole still meets its
// minAvailable (Grove's gang termination at group-replica level); and it
// reports how many group replicas are scheduled and available, and whether
// fewer than minAvailable are.
package podcliquescalinggroup

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "podcliquescalinggroup"

// EventGroupReplicaRecreated is the event of a group replica's recreation.
const EventGroupReplicaRecreated = "GroupReplicaRecreated"

// Reconciler reconciles PodCliqueScalingGroups.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader): a ClusterTopologyBinding the cache misses is read
	// there before packing is left off (topology.Lookup). Nil trusts the cache.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock
	// TopologyAwareScheduling: the grouped PodCliques carry the pod
	// affinity of the PodCliqueSet's topologyConstraints, as the PodCliqueSet
	// controller's PodCliques do (same switch, same topology.Lookup).
	TopologyAwareScheduling bool
	// WriteBudget bounds the objects one pass creates, updates and deletes;
	// 0 means the configuration's default.
	WriteBudget int
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch

// Reconcile runs one pass:
//
//	observe   every read of the pass: the controlling PodCliqueSet (for
//	          the clique templates), the rows of the group's table it
//	          controls (its claims and PodCliques), by group replica
//	decide    the status, the group replicas to recreate (Inference) and
//	          the converge writes, from those facts alone (planPass: pure)
//	execute   one writer (children.Writer.Execute): the status with an
//	          optimistic lock, then the recreated group replicas'
//	          PodCliques deleted and every row kept for the group replicas
//	          below spec.replicas, within the write budget
//	settle    the recreation events, naming what was deleted
//
// The deletions follow a durable decision: they are made only once the
// status they were decided with is written.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("podcliquescalinggroup", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)

	pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcsg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pcsg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	f, err := r.observeAll(ctx, pcsg)
	if err != nil || f == nil {
		return ctrl.Result{}, err
	}
	plan := planPass(*f, r.writeBudget())
	return resultOf(plan, r.writer().Execute(ctx, plan.PassPlan))
}

func (r *Reconciler) writeBudget() int {
	if r.WriteBudget > 0 {
		return r.WriteBudget
	}
	return int(configv1alpha1.DefaultMaxWritesPerReconcile)
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}
