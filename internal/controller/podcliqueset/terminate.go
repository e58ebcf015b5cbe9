package podcliqueset

import (
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// overdueGrace is how long past its grace period a terminating pod may take
// before the PodCliqueSet reports it as stuck: a kubelet normally finishes
// well within it; an unreachable node never does.
const overdueGrace = 30 * time.Second

// awaitedPods are the pods the controller waits to be gone: the previous
// runs of replicas being recreated, every pod still running of an ended
// workload, and the lingering pods a suspension ends.
func awaitedPods(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed) []podstate.Summary {
	var out []podstate.Summary
	if rec.Ended {
		out = append(out, obs.activePods()...)
	}
	out = append(out, lingeringPods(rec, obs.activePods())...)
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
func overdueCheckAt(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed) time.Time {
	var next time.Time
	for _, p := range awaitedPods(pcs, rec, obs) {
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
