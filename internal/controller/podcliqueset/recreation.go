package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// recreationProgress is what this pass found of the recorded recreations.
type recreationProgress struct {
	// inProgress holds every replica with an unfinished recreation; its new
	// objects are not created until the completion is recorded.
	inProgress map[int]bool
	// finished holds the replicas whose old objects are all gone.
	finished map[int]bool
}

// progressRecreations carries out the recreations recorded in status: it
// deletes the old replica's objects that still exist. Only recorded entries
// are acted on, so each deletion follows a durable decision.
func (r *Reconciler) progressRecreations(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children) (recreationProgress, error) {
	progress := recreationProgress{inProgress: map[int]bool{}, finished: map[int]bool{}}
	var errs []error
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.CompletedAt != nil {
			continue
		}
		replica := int(rec.ReplicaIndex)
		progress.inProgress[replica] = true
		objects, err := r.replicaObjects(ctx, pcs, observed, replica)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		doomed := map[types.UID]bool{}
		for _, uid := range rec.Deleting {
			doomed[uid] = true
		}
		remaining := 0
		for _, obj := range objects {
			if !doomed[obj.GetUID()] {
				continue
			}
			remaining++
			if !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			uid := obj.GetUID()
			err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("delete %T %s of replica %d: %w", obj, obj.GetName(), replica, err))
			}
		}
		if remaining == 0 {
			progress.finished[replica] = true
		} else {
			log.FromContext(ctx).V(1).Info("recreating replica", "replica", replica, "remaining", remaining)
		}
	}
	return progress, errors.Join(errs...)
}

// planRecreations records which objects make up each replica to recreate.
// Nothing is deleted here: the plan is written to status first.
func (r *Reconciler) planRecreations(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children,
	replicas []int, reason copsev1alpha1.RecreationReason, now time.Time) ([]copsev1alpha1.ReplicaRecreation, error) {
	var out []copsev1alpha1.ReplicaRecreation
	for _, replica := range replicas {
		objects, err := r.replicaObjects(ctx, pcs, observed, replica)
		if err != nil {
			return nil, err
		}
		rec := copsev1alpha1.ReplicaRecreation{
			ReplicaIndex: int32(replica),
			Reason:       reason,
			Attempt:      currentAttempt(pcs, replica) + 1,
			StartedAt:    metav1.NewTime(now),
		}
		for _, obj := range objects {
			rec.Deleting = append(rec.Deleting, obj.GetUID())
		}
		out = append(out, rec)
	}
	return out, nil
}

// replicaObjects are the objects a recreation of the replica deletes.
func (r *Reconciler) replicaObjects(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children, replica int) ([]client.Object, error) {
	objects := observed.ofReplica(replica)
	gangObjects, err := r.Backend.ReplicaGangObjects(ctx, pcs, replica)
	if err != nil {
		return nil, err
	}
	return append(objects, gangObjects...), nil
}

// currentAttempt is the run the replica's objects belong to: the attempt of
// its latest recreation, 0 if it was never recreated.
func currentAttempt(pcs *copsev1alpha1.PodCliqueSet, replica int) int32 {
	for _, rec := range pcs.Status.ReplicaRecreations {
		if int(rec.ReplicaIndex) == replica {
			return rec.Attempt
		}
	}
	return 0
}

// mergeRecreations returns the recreation list after this pass: finished
// entries get their completion time, new entries replace the replica's
// previous one.
func mergeRecreations(previous, added []copsev1alpha1.ReplicaRecreation, finished map[int]bool, now time.Time) []copsev1alpha1.ReplicaRecreation {
	byReplica := map[int32]copsev1alpha1.ReplicaRecreation{}
	var order []int32
	for _, rec := range previous {
		rec = *rec.DeepCopy()
		if rec.CompletedAt == nil && finished[int(rec.ReplicaIndex)] {
			completed := metav1.NewTime(now)
			rec.CompletedAt = &completed
			rec.Deleting = nil
		}
		if _, seen := byReplica[rec.ReplicaIndex]; !seen {
			order = append(order, rec.ReplicaIndex)
		}
		byReplica[rec.ReplicaIndex] = rec
	}
	for _, rec := range added {
		if _, seen := byReplica[rec.ReplicaIndex]; !seen {
			order = append(order, rec.ReplicaIndex)
		}
		byReplica[rec.ReplicaIndex] = rec
	}
	out := make([]copsev1alpha1.ReplicaRecreation, 0, len(order))
	for _, idx := range order {
		out = append(out, byReplica[idx])
	}
	return out
}
