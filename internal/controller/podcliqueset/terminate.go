package podcliqueset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete

// terminateActivePods deletes every pod of a failed workload that has not
// ended. The PodClique controller creates no pods for a failed workload, so
// none come back.
func (r *Reconciler) terminateActivePods(ctx context.Context, observed *children) error {
	var errs []error
	deleted := 0
	for _, pod := range observed.activePods() {
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		uid := pod.UID
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("terminate pod %s: %w", pod.Name, err))
			continue
		}
		deleted++
	}
	if deleted > 0 {
		log.FromContext(ctx).Info("terminating pods of a failed workload", "pods", deleted)
	}
	return errors.Join(errs...)
}
