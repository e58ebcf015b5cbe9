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
// are deleted, and existing ones of a row with a Refresh are updated when it
// says they changed. Replicas at or beyond spec.replicas lose all their
// objects. A row's Shared objects (no replica label) are kept the same way
// for the PodCliqueSet as a whole. Objects a scaling group controls are left
// to it.
func (r *Reconciler) converge(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *writeBudget) error {
	groupReplicas := obs.groupReplicas()
	var errs []error
	for replica := range int(pcs.Spec.Replicas) {
		if why := lifecycle.MayCreatePods(lifecycle.ReplicaStateOf(pcs, replica, -1)); why != "" {
			log.FromContext(ctx).V(1).Info("not converging replica", "replica", replica, "reason", why)
			continue
		}
		in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: replica, Attempt: lifecycle.CurrentAttempt(pcs, replica),
			GroupReplicas: groupReplicas, Packing: obs.packing, ClaimTemplates: obs.claimTemplates}
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
		if row.Shared != nil {
			in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: -1, ClaimTemplates: obs.claimTemplates}
			errs = append(errs, r.convergeRow(ctx, pcs, row, row.Shared(in), obs.ofReplica(row.Kind, -1), budget))
		}
	}
	return errors.Join(errs...)
}

// convergeRow creates the desired objects that do not exist, refreshes the
// existing ones (row.Refresh), and deletes the existing ones of the
// PodCliqueSet that are not desired.
func (r *Reconciler) convergeRow(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, row blueprint.ReplicaResource,
	desired, existing []client.Object, budget *writeBudget) error {
	present := map[string]client.Object{}
	for _, obj := range existing {
		present[obj.GetName()] = obj
	}
	wanted := map[string]bool{}
	var errs []error
	for _, obj := range desired {
		wanted[obj.GetName()] = true
		if current, ok := present[obj.GetName()]; ok {
			errs = append(errs, r.refreshObject(ctx, pcs, row, current, obj, budget))
			continue
		}
		if !budget.take(1) {
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

// refreshObject writes row.Refresh's changes to an existing object the
// PodCliqueSet controls, with an optimistic lock: a change decided on a stale
// copy fails with a conflict and is made again on the next pass.
func (r *Reconciler) refreshObject(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, row blueprint.ReplicaResource,
	current, desired client.Object, budget *writeBudget) error {
	// A Training workload's objects never change once created: its pod
	// templates are immutable, and its counts are what its run is judged on.
	if row.Refresh == nil || pcs.IsTraining() || !metav1.IsControlledBy(current, pcs) || !current.GetDeletionTimestamp().IsZero() {
		return nil
	}
	updated, ok := current.DeepCopyObject().(client.Object)
	if !ok || !row.Refresh(updated, desired) || !budget.take(1) {
		return nil
	}
	if err := r.Client.Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("update %s %s: %w", row.Kind, updated.GetName(), err)
	}
	return nil
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
