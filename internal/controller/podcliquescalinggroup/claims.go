package podcliquescalinggroup

import (
	"context"
	"errors"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch

// syncClaims keeps the scaling-group level of resourceSharing: the claims
// of the group's entries, owned by the PodCliqueScalingGroup (so they go
// with it), one per AllReplicas entry and one per PerReplica entry and group
// replica below spec.replicas; those of scaled-in group replicas are
// deleted. It runs before the group's PodCliques are created, so their pods
// find the claims; a claim whose template does not exist yet is reported
// and retried, and the pods that need it wait in the PodClique controller.
func (r *Reconciler) syncClaims(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup) error {
	replica, _ := labels.Index(pcsg.Labels, labels.ReplicaKey)
	var desired []*resourcev1.ResourceClaim
	var missingErr error
	if group := resourcesharing.ScalingGroupConfig(pcs, replica, pcsg.Name); group != nil && len(group.ResourceSharing) > 0 {
		external, missing, err := resourcesharing.Gather(ctx, r.Client, pcs)
		if err != nil {
			return err
		}
		missingErr = resourcesharing.MissingError(missing)
		desired = resourcesharing.ScalingGroup(pcs, group, pcsg.Name, int(pcsg.Spec.Replicas), external)
	}
	// Converge also runs without entries: it deletes nothing the group does
	// not own, and the listing comes from the cache.
	_, err := resourcesharing.Converge(ctx, r.Client, r.Scheme, pcsg, client.MatchingLabels{
		labels.PartOfKey: pcs.Name, labels.ScalingGroupKey: pcsg.Name, labels.ComponentKey: labels.ComponentResourceClaim,
	}, desired)
	if err != nil {
		err = fmt.Errorf("resource claims of %s/%s: %w", pcsg.Namespace, pcsg.Name, err)
	}
	return errors.Join(err, missingErr)
}

// ownsClaims watches the claims the group owns for their creation and
// deletion (one deleted from outside is made again); their status changes,
// as pods are scheduled, do not matter here.
func ownsClaims(b *builder.Builder) *builder.Builder {
	return b.Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}))
}
