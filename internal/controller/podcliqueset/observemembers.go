package podcliqueset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// observeDeletedMembers finds the members of whole Training runs that were
// deleted from outside. The cache alone cannot tell a deletion from an
// informer that lags behind another, so each member the cache misses is
// read from the API server: it counts as deleted only when the server has
// no live one of the current run either.
func (r *Reconciler) observeDeletedMembers(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, now time.Time) error {
	for _, replica := range replicasToCheckForDeletions(pcs, obs.records) {
		attempt := obs.records.Attempt(replica)
		var gone []string
		for _, name := range missingRunMembers(pcs, obs, replica, attempt) {
			deleted, err := r.deletedOnServer(ctx, pcs, name, attempt)
			if err != nil {
				return err
			}
			if deleted {
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 {
			if obs.deletedMembers == nil {
				obs.deletedMembers = map[int]deletedMembers{}
			}
			obs.deletedMembers[replica] = deletedMembers{names: gone, at: now}
		}
	}
	return nil
}

// deletedOnServer reports whether the member name of pcs's current run
// (attempt) is gone on the API server: not found, being deleted, or of
// another run. It tries a PodClique first, then a PodCliqueScalingGroup.
func (r *Reconciler) deletedOnServer(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, name string, attempt int32) (bool, error) {
	for _, obj := range []client.Object{&copsev1alpha1.PodClique{}, &copsev1alpha1.PodCliqueScalingGroup{}} {
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, fmt.Errorf("read %s/%s from the API server: %w", pcs.Namespace, name, err)
		}
		return !obj.GetDeletionTimestamp().IsZero() || attemptLabel(obj) != int(attempt), nil
	}
	return true, nil
}
