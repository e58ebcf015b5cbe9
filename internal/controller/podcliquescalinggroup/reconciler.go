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

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/topology"
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
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile writes the group's status, recreates group replicas that stayed
// breached (Inference), and converges the group's PodCliques.
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
	cliques, err := r.ownedPodCliques(ctx, pcsg)
	if err != nil {
		return ctrl.Result{}, err
	}

	status := computeStatus(pcsg, cliques)
	updateStatus(&status, pcsg, generationOf(pcs), cliques, metav1.NewTime(r.now()))
	var recreate groupRecreations
	if !pcs.IsTraining() {
		// Training restarts the whole replica instead (the PodCliqueSet
		// controller), since one missing clique stops the job.
		recreate = decideGroupReplicaRecreations(pcsg.MinAvailable(), status.AvailableReplicas, cliques, pcs.TerminationDelay(), r.now())
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

	recreateErr := r.recreateGroupReplicas(ctx, pcsg, cliques, recreate.replicas)
	claimsErr := r.syncClaims(ctx, pcs, pcsg)
	syncErr := r.syncPodCliques(ctx, pcs, pcsg, cliques, recreate.replicas)
	return ctrl.Result{RequeueAfter: recreate.requeueAfter}, errors.Join(recreateErr, claimsErr, syncErr)
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

func (r *Reconciler) ownedPodCliques(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) ([]copsev1alpha1.PodClique, error) {
	var list copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &list, client.InNamespace(pcsg.Namespace),
		client.MatchingLabels{labels.ScalingGroupKey: pcsg.Name}); err != nil {
		return nil, fmt.Errorf("list PodCliques of %s/%s: %w", pcsg.Namespace, pcsg.Name, err)
	}
	var out []copsev1alpha1.PodClique
	for _, c := range list.Items {
		if metav1.IsControlledBy(&c, pcsg) {
			out = append(out, c)
		}
	}
	return out, nil
}

// recreateGroupReplicas deletes the PodCliques of the group replicas to
// recreate; syncPodCliques creates them afresh on a later pass. The decision
// rests on the cliques' breach conditions, which the API server holds, and
// each deletion names the clique's UID, so a crash in between repeats
// nothing: the recreated cliques start with no breach.
func (r *Reconciler) recreateGroupReplicas(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup, cliques []copsev1alpha1.PodClique, replicas []int) error {
	var errs []error
	for _, j := range replicas {
		var names []string
		for i := range cliques {
			c := &cliques[i]
			if groupReplicaOf(c) != j || !c.DeletionTimestamp.IsZero() {
				continue
			}
			uid := c.UID
			if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("delete PodClique %s to recreate group replica %d: %w", c.Name, j, err))
				continue
			}
			names = append(names, c.Name)
		}
		if len(names) > 0 && r.Recorder != nil {
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, EventGroupReplicaRecreated, "Recreate",
				"group replica %d stayed below minAvailable for longer than terminationDelay while the group still meets its minAvailable %d; recreating its PodCliques %v",
				j, pcsg.MinAvailable(), names)
		}
	}
	return errors.Join(errs...)
}

// syncPodCliques creates the missing PodCliques of group replicas below
// spec.replicas, unless the replica may not have new PodCliques (a Training
// replica being restarted, or whose run was whole already, a workload that
// ended: lifecycle.MayCreatePodCliques), and deletes those of
// replicas at or above it. Replicas being recreated this pass wait for
// their old cliques to be gone.
func (r *Reconciler) syncPodCliques(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup,
	existing []copsev1alpha1.PodClique, recreating []int) error {
	present := map[string]*copsev1alpha1.PodClique{}
	for i := range existing {
		present[existing[i].Name] = &existing[i]
	}
	skip := map[int]bool{}
	for _, j := range recreating {
		skip[j] = true
	}
	replica, _ := labels.Index(pcsg.Labels, labels.ReplicaKey)
	attempt, _ := labels.Index(pcsg.Labels, labels.AttemptKey)
	mayCreate := lifecycle.MayCreatePodCliques(lifecycle.ReplicaStateOf(pcs, replica, attempt)) == ""
	// The PodCliqueSet reports the constraints left out; they are not
	// repeated here.
	packing, _, err := topology.Lookup(ctx, r.Client, r.APIReader, pcs, r.TopologyAwareScheduling)
	if err != nil {
		return err
	}
	var errs []error
	for j := range pcsg.Spec.Replicas {
		if !mayCreate || skip[int(j)] {
			continue
		}
		for _, cliqueName := range pcsg.Spec.CliqueNames {
			template := pcs.CliqueTemplate(cliqueName)
			if template == nil {
				errs = append(errs, fmt.Errorf("clique %q of scaling group %s is not in PodCliqueSet %s's template", cliqueName, pcsg.Name, pcs.Name))
				continue
			}
			pclq := blueprint.GroupedPodClique(pcs, pcsg, j, template, packing)
			if current := present[pclq.Name]; current != nil {
				errs = append(errs, r.refreshPodClique(ctx, pcs, pcsg, current, pclq))
				continue
			}
			if err := controllerutil.SetControllerReference(pcsg, pclq, r.Scheme); err != nil {
				errs = append(errs, fmt.Errorf("owner reference on PodClique %s: %w", pclq.Name, err))
				continue
			}
			if err := r.Client.Create(ctx, pclq); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create PodClique %s: %w", pclq.Name, err))
			}
		}
	}
	for i := range existing {
		c := &existing[i]
		j := groupReplicaOf(c)
		if j >= 0 && j < int(pcsg.Spec.Replicas) || !c.DeletionTimestamp.IsZero() {
			continue
		}
		uid := c.UID
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PodClique %s of a removed group replica: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// refreshPodClique brings an existing PodClique of the group towards the
// template (blueprint.RefreshPodClique): its pod template, minAvailable and
// replicas follow the PodCliqueSet's, as the standalone ones do. The write
// carries the resourceVersion read, so a change decided on a stale copy is
// refused with a conflict and made again on the next pass. A Training
// workload's PodCliques never change once created.
func (r *Reconciler) refreshPodClique(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup,
	current, desired *copsev1alpha1.PodClique) error {
	if pcs.IsTraining() || !current.DeletionTimestamp.IsZero() || !metav1.IsControlledBy(current, pcsg) {
		return nil
	}
	updated := current.DeepCopy()
	if !blueprint.RefreshPodClique(updated, desired) {
		return nil
	}
	if err := r.Client.Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("update PodClique %s to the template: %w", current.Name, err)
	}
	return nil
}

// groupReplicaOf is the clique's group replica index, -1 without one.
func groupReplicaOf(c *copsev1alpha1.PodClique) int {
	if j, ok := labels.Index(c.Labels, labels.ScalingGroupReplicaKey); ok {
		return j
	}
	return -1
}

// SetupWithManager registers the controller; a PodClique's status change
// can change the group's availability, and a PodCliqueSet's new spec or
// generation hash is what the group's PodCliques and update status follow.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	return ownsClaims(ctrl.NewControllerManagedBy(mgr)).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueScalingGroup{}).
		Owns(&copsev1alpha1.PodClique{}).
		Watches(&copsev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(r.groupsOf), builder.WithPredicates(templateChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(r)
}

// groupsOf maps a PodCliqueSet to its PodCliqueScalingGroups.
func (r *Reconciler) groupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	return requeue.RequestsForList(ctx, r.Client, &copsev1alpha1.PodCliqueScalingGroupList{}, obj, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabelsSelector{Selector: labels.SelectPodCliqueSet(obj.GetName())})
}

// templateChanged passes PodCliqueSet updates with a new spec or a new
// generation hash.
func templateChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*copsev1alpha1.PodCliqueSet)
			cur, okNew := e.ObjectNew.(*copsev1alpha1.PodCliqueSet)
			return okOld && okNew && (old.Generation != cur.Generation ||
				!ptr.Equal(old.Status.CurrentGenerationHash, cur.Status.CurrentGenerationHash))
		},
	}
}
