package podclique

import (
	"context"
	"errors"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// syncClaims keeps the clique level of resourceSharing. The clique's claims
// are owned by the PodClique (they go with it): one per AllReplicas entry,
// one per PerReplica entry and pod index below spec.replicas; those of
// scaled-in indices are deleted. Whether the pods may be created yet is
// decided before the status write (unreadyClaims). act is false when the
// clique has no pods to get (being deleted, no PodCliqueSet, labels
// missing).
func (r *Reconciler) syncClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	id blueprint.CliqueIdentity, act bool) error {
	if !act || pcs == nil || len(resourcesharing.References(pcs)) == 0 {
		return nil
	}
	var errs []error
	if clique := pcs.CliqueTemplate(id.Clique); clique != nil && len(clique.ResourceSharing) > 0 {
		external, missing, err := resourcesharing.Gather(ctx, r.Client, pcs)
		if err != nil {
			return err
		}
		errs = append(errs, resourcesharing.MissingError(missing))
		_, err = resourcesharing.Converge(ctx, r.Client, r.Scheme, pclq, client.MatchingLabels{
			labels.PartOfKey: pcs.Name, labels.PodCliqueKey: pclq.Name, labels.ComponentKey: labels.ComponentResourceClaim,
		}, resourcesharing.PodClique(pcs, clique, pclq.Name, int(pclq.Spec.Replicas), external))
		if err != nil {
			errs = append(errs, fmt.Errorf("resource claims of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err))
		}
	}
	return errors.Join(errs...)
}

// claimUsable reports whether the claim exists in the cache, is controlled
// by owner and is not being deleted.
func (r *Reconciler) claimUsable(ctx context.Context, namespace, name string, owner types.UID) (bool, error) {
	claim := &resourcev1.ResourceClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read ResourceClaim %s/%s: %w", namespace, name, err)
	}
	ref := metav1.GetControllerOfNoCopy(claim)
	return ref != nil && ref.UID == owner && claim.DeletionTimestamp.IsZero(), nil
}

// claimToCliques maps a claim copse made to the PodCliques that may wait
// for it or own it: the one its grove.io/podclique label names, else every
// PodClique of its PodCliqueSet.
func (r *Reconciler) claimToCliques(ctx context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[labels.ManagedByKey] != labels.ManagedByValue || l[labels.ComponentKey] != labels.ComponentResourceClaim {
		return nil
	}
	if name := l[labels.PodCliqueKey]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return requeue.RequestsForList(ctx, r.Client, &copsev1alpha1.PodCliqueList{}, obj, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{labels.PartOfKey: l[labels.PartOfKey]})
}

// claimCreatedOrDeleted passes a claim's creation (pods waiting for it may
// go) and deletion (the clique's own is made again); its status changes as
// pods are scheduled do not matter here.
func claimCreatedOrDeleted() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
}
