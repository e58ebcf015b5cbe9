package podcliqueset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// converge makes every replica that may run (lifecycle.MayCreatePods) have
// exactly the objects each row of the resource table wants for it: missing
// ones are created, ones the row no longer wants (a scaled-in group's gang)
// are deleted. Replicas at or beyond spec.replicas lose all their objects.
// Objects a scaling group controls are left to it. Existing objects are not
// updated: template changes are not rolled out (Training rejects them).
func (r *Reconciler) converge(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *writeBudget) error {
	groupReplicas := obs.groupReplicas()
	var errs []error
	for replica := range int(pcs.Spec.Replicas) {
		if why := lifecycle.MayCreatePods(lifecycle.ReplicaStateOf(pcs, replica, -1)); why != "" {
			log.FromContext(ctx).V(1).Info("not converging replica", "replica", replica, "reason", why)
			continue
		}
		in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: replica, Attempt: lifecycle.CurrentAttempt(pcs, replica),
			GroupReplicas: groupReplicas, Packing: obs.packing}
		for _, row := range r.resources() {
			if row.Desired == nil {
				continue
			}
			errs = append(errs, r.convergeRow(ctx, pcs, row, row.Desired(in), obs.ofReplica(row.Kind, replica), budget))
		}
	}
	for _, row := range r.resources() {
		for _, obj := range obs.byKind[row.Kind] {
			if replicaOf(obj) >= int(pcs.Spec.Replicas) && metav1.IsControlledBy(obj, pcs) {
				errs = append(errs, r.deleteObject(ctx, row.Kind, obj, budget))
			}
		}
	}
	return errors.Join(errs...)
}

// convergeRow creates the desired objects that do not exist and deletes the
// existing ones of the PodCliqueSet that are not desired.
func (r *Reconciler) convergeRow(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, row blueprint.ReplicaResource,
	desired, existing []client.Object, budget *writeBudget) error {
	present := map[string]bool{}
	for _, obj := range existing {
		present[obj.GetName()] = true
	}
	wanted := map[string]bool{}
	var errs []error
	for _, obj := range desired {
		wanted[obj.GetName()] = true
		if present[obj.GetName()] || !budget.take(1) {
			continue
		}
		if err := controllerutil.SetControllerReference(pcs, obj, r.Scheme); err != nil {
			errs = append(errs, fmt.Errorf("owner reference on %s %s: %w", row.Kind, obj.GetName(), err))
			continue
		}
		// Names are fixed, so a create repeated on a stale cache fails with
		// AlreadyExists instead of making a second object.
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create %s %s: %w", row.Kind, obj.GetName(), err))
		}
	}
	for _, obj := range existing {
		if !wanted[obj.GetName()] && metav1.IsControlledBy(obj, pcs) {
			errs = append(errs, r.deleteObject(ctx, row.Kind, obj, budget))
		}
	}
	return errors.Join(errs...)
}

// deleteObject deletes one object the PodCliqueSet no longer wants, with a
// UID precondition.
func (r *Reconciler) deleteObject(ctx context.Context, kind string, obj client.Object, budget *writeBudget) error {
	if !obj.GetDeletionTimestamp().IsZero() || !budget.take(1) {
		return nil
	}
	uid := obj.GetUID()
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// desiredGangs are the gangs of every replica, for the backend's objects
// that are not per replica.
func desiredGangs(pcs *copsev1alpha1.PodCliqueSet, obs *observed) []blueprint.Gang {
	return blueprint.DesiredGangs(pcs, obs.groupReplicas(), obs.packing)
}
