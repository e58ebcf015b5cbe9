package podcliqueset

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// decideSuspensions picks the replicas a suspension recreates now: those
// that have not succeeded (their result stays), are not already being
// recreated (the recreation in progress removes their run all the same),
// and still have objects or pods of their current run (currentRun). A
// replica whose run is gone has nothing left to suspend: it gets nothing
// new while suspended, so it is never recreated twice.
func decideSuspensions(replicas []replicaAssessment, inProgress, currentRun map[int]bool) []int {
	var out []int
	for _, r := range replicas {
		if !r.succeeded && !inProgress[r.index] && currentRun[r.index] {
			out = append(out, r.index)
		}
	}
	return out
}

// lingeringPods are the pods a suspension ends without recreating their
// replica: the pods still running of replicas that succeeded (met the
// success policy while others had not yet). Their replica keeps its result
// and gets no new pods (lifecycle.MayCreatePods), so the suspension is
// complete, startTime clears and a queue gets its quota back once they
// are gone too.
func lingeringPods(rec lifecycle.Records, active []podstate.Summary) []podstate.Summary {
	if !rec.Suspended || rec.Ended {
		return nil
	}
	var out []podstate.Summary
	for _, p := range active {
		if rec.Succeeded.Has(p.Replica) {
			out = append(out, p)
		}
	}
	return out
}

// succeededReplicas are the replicas that succeeded, as an index set.
func succeededReplicas(replicas []replicaAssessment) indexset.Set {
	out := indexset.Set{}
	for _, r := range replicas {
		if r.succeeded {
			out.Add(r.index)
		}
	}
	return out
}

// suspendedCondition is the Suspended condition after this pass: True
// while spec.suspend is, saying how many pods are still going away; False
// (Resumed) once spec.suspend is false after having been true; nil while
// the workload was never suspended.
func suspendedCondition(pcs *copsev1alpha1.PodCliqueSet, activePods int, now time.Time) *metav1.Condition {
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeSuspended, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case pcs.IsSuspended():
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonSuspended
		cond.Message = "spec.suspend is true: no pod is left, and none is created until it is false"
		if activePods > 0 {
			cond.Message = fmt.Sprintf("spec.suspend is true: %d pod(s) are still going away; none is created until it is false", activePods)
		}
	case meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuspended) != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonResumed
		cond.Message = "spec.suspend is false: resumed, each replica that had not succeeded runs afresh"
	default:
		return nil
	}
	return &cond
}

// resumedAt is when the workload was last resumed; zero when it never was.
func resumedAt(pcs *copsev1alpha1.PodCliqueSet) time.Time {
	cond := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuspended)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != copsev1alpha1.ReasonResumed {
		return time.Time{}
	}
	return cond.LastTransitionTime.Time
}
