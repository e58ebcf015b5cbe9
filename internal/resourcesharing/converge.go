package resourcesharing

import (
	"context"
	"errors"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Converged is what Converge found and did.
type Converged struct {
	// Present are the desired claims that exist for the owner: controlled
	// by it and not being deleted, or created by this call.
	Present map[string]bool
}

// Converge makes owner's claims those of desired: it lists the claims
// labelled with selector that owner controls, creates the desired ones that
// are missing (owner as controller, so they go with it), and deletes those
// owner controls that are no longer desired (a scaled-in replica's), with a
// UID precondition. A claim of a desired name held by another object (a
// previous owner of the same name, about to be garbage collected) is left
// alone and counts as missing until it is gone. Claims are never updated:
// their spec is immutable.
func Converge(ctx context.Context, c client.Client, scheme *runtime.Scheme, owner client.Object, selector client.MatchingLabels,
	desired []*resourcev1.ResourceClaim) (Converged, error) {
	out := Converged{Present: map[string]bool{}}
	var list resourcev1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(owner.GetNamespace()), selector); err != nil {
		return out, fmt.Errorf("list ResourceClaims of %s: %w", owner.GetName(), err)
	}
	existing := map[string]*resourcev1.ResourceClaim{}
	for i := range list.Items {
		existing[list.Items[i].Name] = &list.Items[i]
	}
	wanted := map[string]bool{}
	var errs []error
	for _, claim := range desired {
		wanted[claim.Name] = true
		if current, ok := existing[claim.Name]; ok {
			out.Present[claim.Name] = metav1.IsControlledBy(current, owner) && current.DeletionTimestamp.IsZero()
			continue
		}
		obj := claim.DeepCopy()
		if err := controllerutil.SetControllerReference(owner, obj, scheme); err != nil {
			errs = append(errs, fmt.Errorf("owner reference on ResourceClaim %s: %w", obj.Name, err))
			continue
		}
		switch err := c.Create(ctx, obj); {
		case err == nil:
			out.Present[obj.Name] = true
		case apierrors.IsAlreadyExists(err):
			// The cache lags, or a previous owner's claim is still there:
			// the next pass sees which.
		default:
			errs = append(errs, fmt.Errorf("create ResourceClaim %s: %w", obj.Name, err))
		}
	}
	for name, current := range existing {
		if wanted[name] || !metav1.IsControlledBy(current, owner) || !current.DeletionTimestamp.IsZero() {
			continue
		}
		uid := current.UID
		if err := c.Delete(ctx, current, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete ResourceClaim %s: %w", name, err))
		}
	}
	return out, errors.Join(errs...)
}
