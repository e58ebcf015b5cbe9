package podclique

import (
	"context"
	"errors"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// claimState is what the cache shows of one claim.
type claimState struct {
	exists     bool
	controller types.UID
	deleting   bool
}

// readClaim reads one claim from the cache.
func (r *Reconciler) readClaim(ctx context.Context, namespace, name string) (claimState, error) {
	claim := &resourcev1.ResourceClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return claimState{}, nil
		}
		return claimState{}, fmt.Errorf("read ResourceClaim %s/%s: %w", namespace, name, err)
	}
	state := claimState{exists: true, deleting: !claim.DeletionTimestamp.IsZero()}
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			state.controller = ref.UID
		}
	}
	return state, nil
}

// claimOwners are the objects that own the claims of each level a pod of
// the clique refers to.
func claimOwners(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique, id blueprint.CliqueIdentity) map[resourcesharing.Level]types.UID {
	owners := map[resourcesharing.Level]types.UID{resourcesharing.LevelPodCliqueSet: pcs.UID, resourcesharing.LevelPodClique: pclq.UID}
	for _, ref := range pclq.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && id.Grouped() {
			owners[resourcesharing.LevelScalingGroup] = ref.UID
		}
	}
	return owners
}

// claimsWaiting are the names of refs whose claim is not usable: absent,
// controlled by another object than its level's owner, or being deleted.
func claimsWaiting(refs []resourcesharing.Ref, claims map[string]claimState, owners map[resourcesharing.Level]types.UID) []string {
	var out []string
	for _, ref := range refs {
		state := claims[ref.Name]
		if !state.exists || state.deleting || state.controller == "" || state.controller != owners[ref.Level] {
			out = append(out, ref.Name)
		}
	}
	return out
}

// syncClaims keeps the clique level of resourceSharing: the rows of the
// clique's table (blueprint.CliqueResources, its claims) for the pod
// indices below spec.replicas, owned by the PodClique so that they go with
// it, within a write budget of their own; those of scaled-in indices are
// deleted. act is false when the clique has no pods to get (being deleted,
// no PodCliqueSet, labels missing). The pods that need a claim wait for it
// (claimsReady); a template that does not exist yet is reported. budgetCut
// is called when the budget leaves claims for the next pass.
func (r *Reconciler) syncClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	id blueprint.CliqueIdentity, act bool, budgetCut func()) (ctrl.Result, error) {
	if !act || pcs == nil || len(resourcesharing.References(pcs)) == 0 {
		return ctrl.Result{}, nil
	}
	template := pcs.CliqueTemplate(id.Clique)
	if template == nil || len(template.ResourceSharing) == 0 {
		return ctrl.Result{}, nil
	}
	external, missing, err := claimtemplates.Read(ctx, r.Client, pcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	rows := blueprint.CliqueResources()
	selector := k8slabels.SelectorFromSet(labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.PodCliqueKey: pclq.Name}))
	listed, err := children.List(ctx, r.Client, rows, pclq.Namespace, selector)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("resource claims of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	for kind, objs := range listed {
		listed[kind] = children.ControlledBy(objs, map[types.UID]bool{pclq.UID: true})
	}
	pass := children.Pass[blueprint.CliqueInputs]{
		Rows:     rows,
		Observed: children.Index(listed, podIndexLabel),
		Replicas: int(pclq.Spec.Replicas),
		Inputs: func(index int) blueprint.CliqueInputs {
			return blueprint.CliqueInputs{PodCliqueSet: pcs, PodClique: pclq, Template: template, Index: index, ClaimTemplates: external}
		},
	}
	budget := children.NewBudget(r.writeBudget()).OnCut(budgetCut)
	if err := (children.Writer{Client: r.Client, Scheme: r.Scheme}).Converge(ctx, pclq, pass.Sets(), budget); err != nil {
		return ctrl.Result{}, errors.Join(fmt.Errorf("resource claims of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err),
			claimtemplates.MissingError(missing))
	}
	if budget.Exhausted() {
		return ctrl.Result{RequeueAfter: requeue.Soon}, claimtemplates.MissingError(missing)
	}
	return ctrl.Result{}, claimtemplates.MissingError(missing)
}

// podIndexLabel reads a claim's pod index label; children.NoReplica when it
// has none (the clique's shared claims).
func podIndexLabel(obj client.Object) int {
	if i, ok := labels.Index(obj.GetLabels(), labels.PodIndexKey); ok {
		return i
	}
	return children.NoReplica
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
	return requeue.CreationsAndDeletions()
}
