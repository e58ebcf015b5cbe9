package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// planRecreations records, for each replica to recreate, the objects of its
// current run: the UIDs of every object of a row the recreation's reason
// deletes (ReplicaResource.DeletedBy).
// Nothing is deleted here: the plan is written to status first, and the
// old run's pods are found later by their attempt label.
func (r *Reconciler) planRecreations(pcs *copsev1alpha1.PodCliqueSet, obs *observed, replicas []int,
	reason copsev1alpha1.RecreationReason, now time.Time) []copsev1alpha1.ReplicaRecreation {
	var out []copsev1alpha1.ReplicaRecreation
	for _, replica := range replicas {
		rec := copsev1alpha1.ReplicaRecreation{
			ReplicaIndex: int32(replica),
			Reason:       reason,
			Attempt:      lifecycle.CurrentAttempt(pcs, replica) + 1,
			StartedAt:    metav1.NewTime(now),
			InPlace:      restartsInPlace(pcs, reason),
		}
		for _, row := range r.resources() {
			if !row.DeletedByRecreation(rec) {
				continue
			}
			for _, obj := range obs.children.Of(row.Kind, replica) {
				rec.Deleting = append(rec.Deleting, obj.GetUID())
			}
		}
		out = append(out, rec)
	}
	return out
}

// deleteOldRuns carries out the recreations recorded in status: it deletes
// the old run's pods itself, in parallel, rather than leaving them to the
// garbage collector, and then the recorded objects that still exist, so that
// the new run starts as soon as the old one is gone. The pods go first: their
// grace period is what the new run waits for. Only recorded entries are
// acted on, so each deletion follows a durable decision; UID preconditions
// keep it from touching anything created afterwards.
func (r *Reconciler) deleteOldRuns(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *children.Budget) error {
	// Read now, from the status as written: a restart in place decided in
	// this pass moves its pods in this pass.
	if err := r.observeLostNodes(ctx, pcs, obs); err != nil {
		return fmt.Errorf("check the nodes of the pods restarted in place: %w", err)
	}
	var errs []error
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.CompletedAt != nil {
			continue
		}
		replica := int(rec.ReplicaIndex)
		pods := oldRunPods(obs.replica(replica).pods, replica, rec.Attempt)
		var kept []podstate.Summary
		if rec.InPlace {
			kept, pods = splitKept(pods, obs.lostNodes)
			errs = append(errs, r.moveKeptPods(ctx, pcs, rec, children.Cut(budget, kept)))
		}
		pods = children.Cut(budget, pods)
		if len(pods) > 0 {
			log.FromContext(ctx).V(1).Info("deleting the pods of the replica's previous run", "replica", replica, "pods", len(pods), "inPlace", rec.InPlace)
		}
		_, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
			if obs.lostNodes[pods[i].Node] {
				return children.DeletePodFromLostNode(ctx, r.Client, pcs.Namespace, pods[i])
			}
			return children.DeletePodAndRelease(ctx, r.Client, pcs.Namespace, pods[i])
		})
		errs = append(errs, err)
		if len(kept) > 0 {
			// The recorded objects go once no kept pod names them as its
			// controller any more: deleting them earlier would have the
			// garbage collector delete the kept pods with them.
			continue
		}

		doomed := map[types.UID]bool{}
		for _, uid := range rec.Deleting {
			doomed[uid] = true
		}
		for _, row := range r.resources() {
			var recorded []client.Object
			for _, obj := range obs.children.Of(row.Kind, replica) {
				if doomed[obj.GetUID()] {
					recorded = append(recorded, obj)
				}
			}
			if _, err := r.children().Delete(ctx, row.Kind, recorded, budget); err != nil {
				errs = append(errs, fmt.Errorf("replica %d's old run: %w", replica, err))
			}
		}
	}
	return errors.Join(errs...)
}
