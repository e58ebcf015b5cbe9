package podclique

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
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

// claimSets are the clique level of resourceSharing as the writer's sets:
// the rows of the clique's table (blueprint.CliqueResources, its claims)
// for the pod indices below spec.replicas, owned by the PodClique so that
// they go with it; those of scaled-in indices are deleted. None when the
// clique's pods get no claims of their own, or it has no pods to get
// (observeClaims read nothing). The pods that need a claim wait for it
// (unreadyClaims).
func claimSets(pclq *copsev1alpha1.PodClique, o *observation) []children.Set {
	if !o.claims.read {
		return nil
	}
	template := o.pcs.CliqueTemplate(o.id.Clique)
	pass := children.Pass[blueprint.CliqueInputs]{
		Rows:     blueprint.CliqueResources(),
		Observed: children.Index(o.claims.listed, podIndexLabel),
		Replicas: int(pclq.Spec.Replicas),
		Inputs: func(index int) blueprint.CliqueInputs {
			return blueprint.CliqueInputs{PodCliqueSet: o.pcs, PodClique: pclq, Template: template, Index: index, ClaimTemplates: o.claims.templates}
		},
	}
	sets := pass.Sets()
	for i := range sets {
		sets[i].Step = stepClaims
	}
	return sets
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
