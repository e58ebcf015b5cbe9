package trainjob

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
)

// reasonPodCliqueSetFailed is the reason of a TrainJob whose PodCliqueSet
// failed without a Failed condition to say why. Every other outcome on the
// PodCliqueSet backend has JobSet's reason (jobsetconstants), as the JobSet
// backend mirrors it for the same outcome, or the PodCliqueSet's own where
// JobSet has no such outcome (MaxRuntimeExceeded).
const reasonPodCliqueSetFailed = "PodCliqueSetFailed"

// trainJobFailureReason is the TrainJob reason for a PodCliqueSet's Failed
// reason: JobSet's for the same outcome, else the PodCliqueSet's (e.g.
// MaxUncountedRestartsExceeded: JobSet restarts without a bound). A
// FailWorkload rule (FailedByRule) is JobSet's FailJobSet action. A spent
// restart budget (MaxRestartsExceeded) is JobSet's ReachedMaxRestarts when
// the runtime has a failurePolicy, and FailedJobs when it has none: JobSet
// then fails at the first failed Job without a restart, as the PodCliqueSet
// (maxRestarts 0) does.
func trainJobFailureReason(pcsReason string, failurePolicy bool) string {
	switch {
	case pcsReason == copsev1alpha1.ReasonFailedByRule:
		// A failure rule translated from a JobSet rule with action FailJobSet.
		return jobsetconstants.FailJobSetActionReason
	case pcsReason != copsev1alpha1.ReasonMaxRestartsExceeded:
		return pcsReason
	case failurePolicy:
		return jobsetconstants.ReachedMaxRestartsReason
	default:
		return jobsetconstants.FailedJobsReason
	}
}

// mirrorPodCliqueSetOutcome carries a Training PodCliqueSet's end over with
// the reason the JobSet backend gives the same end: Succeeded becomes
// Complete, reason AllJobsCompleted, whether every clique completed or its
// success policy was met (JobSet's success policy completes the JobSet with
// that reason too); Failed stays Failed with the reason of
// trainJobFailureReason (FailedJobs, ReachedMaxRestarts; MaxRuntimeExceeded).
// The message says what copse knows besides: which cliques met the success
// policy, the PodCliqueSet's own words for a failure and the root cause of
// the last one, and the restart count (TrainJob has no field for it). The
// condition's time is when the PodCliqueSet reached its end (outcomeTime),
// not when copse noticed, so the TTL counts from it.
func mirrorPodCliqueSetOutcome(status *trainerv1alpha1.TrainJobStatus, pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique,
	failurePolicy bool, now time.Time) {
	switch pcs.Status.Phase {
	case copsev1alpha1.PodCliqueSetPhaseSucceeded:
		message := fmt.Sprintf("PodCliqueSet %s succeeded: every clique completed", pcs.Name)
		if meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) {
			message = fmt.Sprintf("PodCliqueSet %s succeeded: %s", pcs.Name, successPolicyNote(pcs, pclqs))
		}
		setCondition(status, trainerv1alpha1.TrainJobComplete, jobsetconstants.AllJobsCompletedReason, message+restartsNote(pcs), outcomeTime(pcs, pclqs, now))
	case copsev1alpha1.PodCliqueSetPhaseFailed:
		reason, message := reasonPodCliqueSetFailed, fmt.Sprintf("PodCliqueSet %s failed", pcs.Name)
		if c := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil && c.Reason != "" {
			reason = trainJobFailureReason(c.Reason, failurePolicy)
			if reason == jobsetconstants.FailedJobsReason {
				message += " (the runtime has no failurePolicy: the first failure ends the TrainJob)"
			}
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

// successPolicyNote says which target cliques of the success policy
// succeeded, e.g. "launcher succeeded; success policy met".
func successPolicyNote(pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique) string {
	var targets []string
	if training := pcs.Spec.TrainingSpec; training != nil && training.SuccessPolicy != nil {
		targets = training.SuccessPolicy.TargetCliques
	}
	var done []string
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil || (len(targets) > 0 && !slices.Contains(targets, clique.Name)) {
			continue
		}
		if pclq := currentPodCliques(pclqs)[clique.Name]; pclq != nil && meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded) {
			done = append(done, clique.Name)
		}
	}
	if len(done) == 0 {
		return "success policy met"
	}
	return strings.Join(done, ", ") + " succeeded; success policy met"
}

// outcomeTime is when a finished PodCliqueSet reached its end, as it
// recorded it: its completionTime; from a PodCliqueSet an older copse
// ended, which has none: a failure, when its Failed condition turned True (JobSet's
// Failed condition likewise is set when the failure is decided, before the
// last pods are gone); a success by its success policy, when
// SuccessCriteriaMet turned True; any other success, when its last clique
// completed: the latest lastSucceededTime (the pods' own finish times) of
// the current run's PodCliques. now only when it recorded none.
func outcomeTime(pcs *copsev1alpha1.PodCliqueSet, pclqs []copsev1alpha1.PodClique, now time.Time) time.Time {
	if t := pcs.Status.CompletionTime; t != nil && !t.After(now) {
		// Written with the terminal phase, in one status write: no cache of
		// another kind needs to have caught up.
		return t.Time
	}
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

// restartsNote is " (restarts: N)", with the part that did not spend
// maxRestarts when a failure rule made some without counting.
func restartsNote(pcs *copsev1alpha1.PodCliqueSet) string {
	if n := pcs.Status.UncountedRestarts; n > 0 {
		return fmt.Sprintf(" (restarts: %d, %d of them uncounted by failure rules)", pcs.Status.RestartCount, n)
	}
	return fmt.Sprintf(" (restarts: %d)", pcs.Status.RestartCount)
}

// podCliqueSetJobsStatus counts, per replicated job, its Jobs as JobSet
// does, where the job's one Job is its clique in the PodCliqueSet's one
// replica. A clique counts as
//   - succeeded once its PodClique has the Succeeded condition, and, after
//     a suspension or any recreation but a restart, while it runs again
//     (succeededBeforeSuspension): a
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
// by anything but a restart (a suspension, then perhaps an incomplete
// placement or an in-place barrier's timeout, whose record replaces the
// suspension's): their success stands although the recreation removed
// their PodCliques and the new run starts them again. Only a restart,
// counted or not, undoes it, as only a restart reruns a JobSet's completed
// Job.
func succeededBeforeSuspension(pcs *copsev1alpha1.PodCliqueSet, previous []trainerv1alpha1.JobStatus) map[string]bool {
	out := map[string]bool{}
	for _, rec := range pcs.Status.ReplicaRecreations {
		if rec.ReplicaIndex != 0 || rec.Reason.IsRestart() {
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
