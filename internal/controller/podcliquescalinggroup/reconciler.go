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
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/metrics"
	"github.com/copse-dev/copse/internal/requeue"
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
//	owner     the controlling PodCliqueSet (for the clique templates)
//	observe   the rows of the group's table it controls (its claims and
//	          PodCliques), by group replica
//	status    computed from its PodCliques and written once
//	decide    Inference: group replicas to recreate             (pure)
//	act       delete the recreated group replicas' PodCliques, then keep
//	          every row for the group replicas below spec.replicas
//	          (internal/children), within the write budget
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
	pcs, err := r.owningPodCliqueSet(ctx, pcsg)
	if err != nil || pcs == nil {
		return ctrl.Result{}, err
	}
	obs, err := r.observe(ctx, pcs, pcsg)
	if err != nil {
		return ctrl.Result{}, err
	}

	status := computeStatus(pcsg, obs.cliques)
	updateStatus(&status, pcsg, generationOf(pcs), obs.cliques, metav1.NewTime(r.now()))
	var recreate groupRecreations
	if !pcs.IsTraining() {
		// Training restarts the whole replica instead (the PodCliqueSet
		// controller), since one missing clique stops the job.
		recreate = decideGroupReplicaRecreations(pcsg.MinAvailable(), status.AvailableReplicas, obs.cliques, pcs.TerminationDelay(), r.now())
	}
	if !apiequality.Semantic.DeepEqual(pcsg.Status, status) {
		patch := client.MergeFromWithOptions(pcsg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pcsg.Status = status
		if err := r.Client.Status().Patch(ctx, pcsg, patch); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
			}
			return ctrl.Result{}, fmt.Errorf("write status of %s: %w", req.NamespacedName, err)
		}
	}

	budget := children.NewBudget(r.writeBudget()).OnCut(metrics.WriteBudgetCut("PodCliqueScalingGroup"))
	recreateErr := r.recreateGroupReplicas(ctx, pcsg, obs, recreate.replicas, budget)
	convergeErr := r.converge(ctx, pcs, pcsg, obs, recreate.replicas, budget)
	result := ctrl.Result{RequeueAfter: recreate.requeueAfter}
	if budget.Exhausted() {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: requeue.Soon})
	}
	return result, errors.Join(recreateErr, convergeErr, claimtemplates.MissingError(obs.missingClaimTemplates))
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

// owningPodCliqueSet returns the PodCliqueSet that controls the group, or
// nil when it is gone or is not the controller (nothing to do then).
func (r *Reconciler) owningPodCliqueSet(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (*copsev1alpha1.PodCliqueSet, error) {
	owner := metav1.GetControllerOf(pcsg)
	if owner == nil || owner.Kind != "PodCliqueSet" {
		return nil, nil
	}
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcsg.Namespace, Name: owner.Name}, pcs); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pcs.UID != owner.UID || !pcs.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return pcs, nil
}
