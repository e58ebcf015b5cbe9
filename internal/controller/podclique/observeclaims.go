package podclique

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// claimFacts is what observeClaims read of the clique's own ResourceClaims.
type claimFacts struct {
	// read: the clique's pods get claims of their own and it may have pods,
	// so the rest was read.
	read bool
	// listed are the claims the PodClique controls, by kind.
	listed map[string][]client.Object
	// templates are the external ResourceClaimTemplates the claims are made
	// from; missing those named that do not exist.
	templates resourcesharing.External
	missing   []types.NamespacedName
}

// observeClaims reads the clique's own ResourceClaims and the templates
// they are made from, when its pods get claims of their own and it may
// have pods (not being deleted, its PodCliqueSet found, its labels read).
func (r *Reconciler) observeClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation) (claimFacts, error) {
	if o.idErr != nil || o.creation.going || o.pcs == nil || len(resourcesharing.References(o.pcs)) == 0 {
		return claimFacts{}, nil
	}
	if template := o.pcs.CliqueTemplate(o.id.Clique); template == nil || len(template.ResourceSharing) == 0 {
		return claimFacts{}, nil
	}
	templates, missing, err := claimtemplates.Read(ctx, r.Client, o.pcs)
	if err != nil {
		return claimFacts{}, err
	}
	selector := k8slabels.SelectorFromSet(labels.Merge(labels.ForPodCliqueSet(o.pcs.Name), map[string]string{labels.PodCliqueKey: pclq.Name}))
	listed, err := children.List(ctx, r.Client, blueprint.CliqueResources(), pclq.Namespace, selector)
	if err != nil {
		return claimFacts{}, fmt.Errorf("resource claims of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	for kind, objs := range listed {
		listed[kind] = children.ControlledBy(objs, map[types.UID]bool{pclq.UID: true})
	}
	return claimFacts{read: true, listed: listed, templates: templates, missing: missing}, nil
}

// unreadyClaims gathers, for the pods of the indices to create, the
// ResourceClaims they refer to (resourcesharing.PodClaims: the
// PodCliqueSet's, the scaling group's and the clique's) that are not usable
// yet: missing from the cache, controlled by another object than the one of
// their level, or being deleted. The pods wait until there are none: a pod
// created earlier would wait unscheduled for a claim that may never come (a
// template not created yet), or join one that is on its way out. The
// clique's own claims are written after the status (claimSets), and
// their creation wakes the clique again (claimToCliques).
func (r *Reconciler) unreadyClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	id blueprint.CliqueIdentity, create []int) ([]string, error) {
	if pcs == nil || len(create) == 0 || len(resourcesharing.References(pcs)) == 0 {
		return nil, nil
	}
	var refs []resourcesharing.Ref
	seen := map[string]claimState{}
	for _, index := range create {
		place := blueprint.PodPlaceOf(blueprint.PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id, Index: index})
		for _, ref := range resourcesharing.PodClaims(pcs, place) {
			if _, read := seen[ref.Name]; read {
				continue
			}
			state, err := r.readClaim(ctx, pclq.Namespace, ref.Name)
			if err != nil {
				return nil, err
			}
			seen[ref.Name] = state
			refs = append(refs, ref)
		}
	}
	return claimsWaiting(refs, seen, claimOwners(pcs, pclq, id)), nil
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
