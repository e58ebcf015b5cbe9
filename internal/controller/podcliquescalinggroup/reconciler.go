// Package podcliquescalinggroup holds the PodCliqueScalingGroup controller:
// for each replica j of a scaling group it keeps one PodClique per member
// clique, and it reports how many group replicas are scheduled and
// available, and whether fewer than minAvailable are.
package podcliquescalinggroup

import (
	"context"
	"errors"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "podcliquescalinggroup"

// Reconciler reconciles PodCliqueScalingGroups.
type Reconciler struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch

// Reconcile converges a scaling group's PodCliques and writes its status.
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
	syncErr := r.syncPodCliques(ctx, pcs, pcsg, cliques)

	status := computeStatus(pcsg, cliques)
	if !apiequality.Semantic.DeepEqual(pcsg.Status, status) {
		patch := client.MergeFromWithOptions(pcsg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pcsg.Status = status
		if err := r.Client.Status().Patch(ctx, pcsg, patch); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, fmt.Errorf("write status of %s: %w", req.NamespacedName, err)
		}
	}
	return ctrl.Result{}, syncErr
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

// syncPodCliques creates the missing PodCliques of group replicas below
// spec.replicas and deletes those of replicas at or above it.
func (r *Reconciler) syncPodCliques(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup, existing []copsev1alpha1.PodClique) error {
	present := map[string]bool{}
	for _, c := range existing {
		present[c.Name] = true
	}
	var errs []error
	for j := range pcsg.Spec.Replicas {
		for _, cliqueName := range pcsg.Spec.CliqueNames {
			template := blueprint.CliqueTemplate(pcs, cliqueName)
			if template == nil {
				errs = append(errs, fmt.Errorf("clique %q of scaling group %s is not in PodCliqueSet %s's template", cliqueName, pcsg.Name, pcs.Name))
				continue
			}
			pclq := blueprint.GroupedPodClique(pcs, pcsg, j, template)
			if present[pclq.Name] {
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
		j, ok := labels.Index(c.Labels, labels.ScalingGroupReplicaKey)
		if ok && j < int(pcsg.Spec.Replicas) || !c.DeletionTimestamp.IsZero() {
			continue
		}
		uid := c.UID
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PodClique %s of a removed group replica: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// SetupWithManager registers the controller; a PodClique's status change
// can change the group's availability.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueScalingGroup{}).
		Owns(&copsev1alpha1.PodClique{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(r)
}
