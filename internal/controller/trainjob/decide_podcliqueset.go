package trainjob

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
)

// Reasons of a TrainJob's outcome on the PodCliqueSet backend. Where the
// meaning is JobSet's, the reason is the one the JobSet backend mirrors from
// JobSet; the others are the PodCliqueSet's own.
const (
	// reasonAllJobsCompleted: every clique succeeded (JobSet's reason for a
	// completed JobSet).
	reasonAllJobsCompleted = "AllJobsCompleted"
	// reasonPodCliqueSetFailed: the PodCliqueSet failed without saying why.
	reasonPodCliqueSetFailed = "PodCliqueSetFailed"
	// reasonReachedMaxRestarts is JobSet's reason for a spent restart
	// budget; the PodCliqueSet's MaxRestartsExceeded means the same, and a
	// TrainJob says it the same way on both backends.
	reasonReachedMaxRestarts = "ReachedMaxRestarts"
)

// trainJobFailureReason is the TrainJob reason for a PodCliqueSet's Failed
// reason: JobSet's where the meaning is the same, else the PodCliqueSet's.
func trainJobFailureReason(pcsReason string) string {
	if pcsReason == copsev1alpha1.ReasonMaxRestartsExceeded {
		return reasonReachedMaxRestarts
	}
	return pcsReason
}

// mirrorPodCliqueSetOutcome carries a Training PodCliqueSet's end over:
// Succeeded becomes Complete (reason SuccessPolicy when its success policy
// ended it, else AllJobsCompleted), Failed stays Failed with the reason of
// trainJobFailureReason (ReachedMaxRestarts, MaxRuntimeExceeded). TrainJob
// has no field for the restart count, so the message says it, with the root
// cause of the last failure. The condition's time is when the PodCliqueSet
// reached its end (outcomeTime), not when copse noticed, so the TTL counts
// from it.
func mirrorPodCliqueSetOutcome(status *trainerv1alpha1.TrainJobStatus, pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique, now time.Time) {
	switch pcs.Status.Phase {
	case copsev1alpha1.PodCliqueSetPhaseSucceeded:
		reason, message := reasonAllJobsCompleted, fmt.Sprintf("PodCliqueSet %s succeeded: every clique completed", pcs.Name)
		if meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) {
			reason, message = copsev1alpha1.ReasonSuccessPolicy, fmt.Sprintf("PodCliqueSet %s succeeded: its success policy was met", pcs.Name)
		}
		setCondition(status, trainerv1alpha1.TrainJobComplete, reason, message+restartsNote(pcs), outcomeTime(pcs, pclqs, now))
	case copsev1alpha1.PodCliqueSetPhaseFailed:
		reason, message := reasonPodCliqueSetFailed, fmt.Sprintf("PodCliqueSet %s failed", pcs.Name)
		if c := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil && c.Reason != "" {
			reason = trainJobFailureReason(c.Reason)
			if c.Message != "" {
				message += ": " + c.Message
			}
		}
		if failure := pcs.Status.LastFailure; failure != nil && failure.Summary != "" {
			message += "; last failure: " + failure.Summary
		}
		setCondition(status, trainerv1alpha1.TrainJobFailed, reason, message+restartsNote(pcs), outcomeTime(pcs, pclqs, now))
	}
}

// outcomeTime is when a finished PodCliqueSet reached its end, as it
// recorded it: a failure, when its Failed condition turned True (JobSet's
// Failed condition likewise is set when the failure is decided, before the
// last pods are gone); a success by its success policy, when
// SuccessCriteriaMet turned True; any other success, when its last clique
// completed: the latest lastSucceededTime (the pods' own finish times) of
// the current run's PodCliques. now only when it recorded none.
func outcomeTime(pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique, now time.Time) time.Time {
	var at time.Time
	switch {
	case pcs.Status.Phase == copsev1alpha1.PodCliqueSetPhaseFailed:
		if c := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil && c.Status == metav1.ConditionTrue {
			at = c.LastTransitionTime.Time
		}
	case meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet):
		at = meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet).LastTransitionTime.Time
	default:
		for _, pclq := range currentPodCliques(pclqs) {
			if t := pclq.Status.LastSucceededTime; t != nil && t.After(at) {
				at = t.Time
			}
		}
	}
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}

func restartsNote(pcs *copsev1alpha1.PodCliqueSet) string {
	return fmt.Sprintf(" (restarts: %d)", pcs.Status.RestartCount)
}

// podCliqueSetJobsStatus counts, per replicated job, its Jobs as JobSet
// does, where the job's one Job is its clique in the PodCliqueSet's one
// replica. A clique counts as
//   - succeeded once its PodClique has the Succeeded condition, and, after
//     a suspension, while it runs again (succeededBeforeSuspension): a
//     JobSet keeps a completed Job through a suspension, and Kueue, which
//     reclaims a succeeded job's quota, refuses to see that count shrink
//     while it holds the quota (it would stop handling the TrainJob). It is
//     also active while its pods run again;
//   - failed when the PodCliqueSet failed and the root cause of its last
//     failure was one of the clique's pods;
//   - suspended while the PodCliqueSet is suspended and the clique has not
//     finished, and active as well while any of its pods has not ended
//     (podsNotEnded, terminating pods included): Kueue releases a stopped
//     TrainJob's quota once no job is active, and the nodes are free only
//     once the pods are gone;
//   - otherwise active while it has pods that have not ended, and ready
//     when its ready and succeeded pods are at least its pod count.
//
// A clique without a PodClique yet (waiting for another to succeed, or
// while its replica restarts) counts as nothing.
func podCliqueSetJobsStatus(pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique, podsNotEnded map[string]int, previous []trainerv1alpha1.JobStatus) []trainerv1alpha1.JobStatus {
	current := currentPodCliques(pclqs)
	suspended := ptr.Deref(pcs.Spec.Suspend, false)
	carried := succeededBeforeSuspension(pcs, previous)
	var out []trainerv1alpha1.JobStatus
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		var ready, succeeded, failed, active, suspendedJobs int32
		pclq := current[clique.Name]
		switch {
		case pclq != nil && meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded):
			succeeded = 1
		case pcs.Status.Phase == copsev1alpha1.PodCliqueSetPhaseFailed && pclq != nil &&
			pcs.Status.LastFailure != nil && pcs.Status.LastFailure.PodClique == pclq.Name:
			failed = 1
		case carried[clique.Name]:
			succeeded = 1
			if podsNotEnded[clique.Name] > 0 {
				active = 1
			}
		case suspended:
			suspendedJobs = 1
			if podsNotEnded[clique.Name] > 0 {
				active = 1
			}
		case pclq != nil:
			if pclq.Status.Replicas > 0 {
				active = 1
			}
			if podsReadyOrSucceeded(pclq) >= pclq.Spec.Replicas {
				ready = 1
			}
		}
		out = append(out, trainerv1alpha1.JobStatus{
			Name: clique.Name, Ready: ptr.To(ready), Succeeded: ptr.To(succeeded), Failed: ptr.To(failed),
			Active: ptr.To(active), Suspended: ptr.To(suspendedJobs),
		})
	}
	return out
}

// succeededBeforeSuspension names the cliques the previous jobsStatus
// counted as succeeded, when the PodCliqueSet's replica was last recreated
// by a suspension: their success stands although the suspension removed
// their PodCliques and the resumed run starts them again. A Training
// restart undoes it (the latest recreation is then the restart's).
func succeededBeforeSuspension(pcs *copsev1alpha1.PodCliqueSet, previous []trainerv1alpha1.JobStatus) map[string]bool {
	out := map[string]bool{}
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.ReplicaIndex != 0 || rec.Reason != copsev1alpha1.RecreationReasonSuspension {
			continue
		}
		for _, job := range previous {
			if ptr.Deref(job.Succeeded, 0) > 0 {
				out[job.Name] = true
			}
		}
	}
	return out
}

// currentPodCliques maps each clique template to its PodClique of the
// latest attempt: while a replica restarts, the old run's may linger.
func currentPodCliques(pclqs []copsev1alpha1.PodClique) map[string]*copsev1alpha1.PodClique {
	out := map[string]*copsev1alpha1.PodClique{}
	attempts := map[string]int{}
	for i := range pclqs {
		pclq := &pclqs[i]
		clique := pclq.Labels[labels.CliqueTemplateKey]
		attempt, _ := labels.Index(pclq.Labels, labels.AttemptKey)
		if prev, seen := attempts[clique]; clique == "" || (seen && prev > attempt) {
			continue
		}
		out[clique], attempts[clique] = pclq, attempt
	}
	return out
}

// podsReadyOrSucceeded is a PodClique's ready pods plus its recorded
// successes (JobSet counts a Job ready when ready and succeeded pods reach
// its pod count).
func podsReadyOrSucceeded(pclq *copsev1alpha1.PodClique) int32 {
	done, err := indexset.Parse(pclq.Status.SucceededIndexes, int(pclq.Spec.Replicas))
	if err != nil {
		done = indexset.Set{}
	}
	return pclq.Status.ReadyReplicas + int32(done.CountBelow(int(pclq.Spec.Replicas)))
}
