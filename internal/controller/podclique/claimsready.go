package podclique

import (
	"context"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// unreadyClaims gathers, for the pods of the indices to create, the
// ResourceClaims they refer to (resourcesharing.PodClaims: the
// PodCliqueSet's, the scaling group's and the clique's) that are not usable
// yet: missing from the cache, controlled by another object than the one of
// their level, or being deleted. The pods wait until there are none: a pod
// created earlier would wait unscheduled for a claim that may never come (a
// template not created yet), or join one that is on its way out. The
// clique's own claims are created after the status write (syncClaims), and
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
