package podcliqueset

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// overdueGrace is how long past its grace period a terminating pod may take
// before the PodCliqueSet reports it as stuck: a kubelet normally finishes
// well within it; an unreachable node never does.
const overdueGrace = 30 * time.Second

// terminateActivePods deletes every pod of an ended workload (failed, or
// its success policy met) that has not ended, and releases the outcome
// finalizer of each (an ended workload records no more outcomes). The
// PodClique controller creates no pods for an ended workload, so none come
// back. Pods are never force-deleted: one on
// an unreachable node stays terminating, and TerminationOverdue says so.
func (r *Reconciler) terminateActivePods(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *children.Budget) error {
	pods := children.Cut(budget, obs.activePods())
	if len(pods) == 0 {
		return nil
	}
	log.FromContext(ctx).Info("terminating the pods of an ended workload", "pods", len(pods),
		"failed", isFailing(pcs), "successCriteriaMet", successCriteriaMet(pcs))
	_, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		return children.DeletePodAndRelease(ctx, r.Client, pcs.Namespace, pods[i])
	})
	return err
}

// endLingeringPods deletes, while the workload is suspended, the pods still
// running of replicas that succeeded (lingeringPods), releasing their
// outcome finalizer: their replica's result is recorded in its PodCliques'
// Succeeded conditions and status.succeededReplicaIndexes, both durable
// before this runs.
func (r *Reconciler) endLingeringPods(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *children.Budget) error {
	pods := children.Cut(budget, lingeringPods(pcs, obs.activePods()))
	if len(pods) == 0 {
		return nil
	}
	log.FromContext(ctx).Info("suspended: ending the lingering pods of replicas that succeeded", "pods", len(pods),
		"succeededReplicas", pcs.Status.SucceededReplicaIndexes)
	_, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		return children.DeletePodAndRelease(ctx, r.Client, pcs.Namespace, pods[i])
	})
	return err
}

// releaseEndedPods removes the outcome finalizer of the pods of an ended
// Training workload that have stopped. They stay for their logs; their
// outcome no longer matters, and nothing else would release them once the
// workload's status stops changing.
func (r *Reconciler) releaseEndedPods(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *children.Budget) error {
	var held []podstate.Summary
	for _, p := range obs.pods {
		if p.HasOutcomeFinalizer && p.Terminal() {
			held = append(held, p)
		}
	}
	held = children.Cut(budget, held)
	_, err := children.InSlowStart(ctx, len(held), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		return children.ReleasePodOutcome(ctx, r.Client, pcs.Namespace, held[i])
	})
	return err
}

// awaitedPods are the pods the controller waits to be gone: the previous
// runs of replicas being recreated, every pod still running of an ended
// workload, and the lingering pods a suspension ends.
func awaitedPods(pcs *copsev1alpha1.PodCliqueSet, obs *observed) []podstate.Summary {
	var out []podstate.Summary
	if lifecycle.WorkloadEnded(pcs) {
		out = append(out, obs.activePods()...)
	}
	out = append(out, lingeringPods(pcs, obs.activePods())...)
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.CompletedAt == nil {
			out = append(out, oldRunPods(obs.replica(int(rec.ReplicaIndex)).pods, int(rec.ReplicaIndex), rec.Attempt)...)
		}
	}
	return out
}

// overduePods are the awaited pods still terminating overdueGrace after
// their grace period ended.
func overduePods(awaited []podstate.Summary, now time.Time) []podstate.Summary {
	var out []podstate.Summary
	for _, p := range awaited {
		if p.Terminating && !now.Before(p.DeletionDeadline.Add(overdueGrace)) {
			out = append(out, p)
		}
	}
	return out
}

// overdueCheckAt is when the next awaited, terminating pod becomes overdue;
// zero when none will.
func overdueCheckAt(pcs *copsev1alpha1.PodCliqueSet, obs *observed) time.Time {
	var next time.Time
	for _, p := range awaitedPods(pcs, obs) {
		if !p.Terminating {
			continue
		}
		at := p.DeletionDeadline.Add(overdueGrace)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}
