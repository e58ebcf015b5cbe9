package trainjob

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/indexset"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// Condition messages copse writes itself, Kubeflow Trainer's words.
const (
	suspendedMessage        = "TrainJob is suspended"
	resumedMessage          = "TrainJob is resumed"
	deadlineExceededMessage = "TrainJob exceeded its active deadline"
)

// topologyRetry is how long a TrainJob whose topology level no
// ClusterTopologyBinding has waits before it looks again; a binding's
// creation or change wakes it sooner (SetupWithManager).
const topologyRetry = 30 * time.Second

// minRequeue is the shortest wait for a deadline or TTL that is due now or
// in the past: the clocks of operator and API server may differ a little.
const minRequeue = time.Second

// facts are the plain values a TrainJob's decisions depend on.
type facts struct {
	TrainJob *trainerv1alpha1.TrainJob
	// Backend is what the TrainJob runs as (its runtime snapshot's);
	// "" is the JobSet backend.
	Backend trainerv1alpha1.RuntimeBackend
	// JobSet is the TrainJob's JobSet, nil when there is none (or the
	// TrainJob runs on the PodCliqueSet backend).
	JobSet *jobsetv1alpha2.JobSet
	// PodCliqueSet is the TrainJob's PodCliqueSet, nil when there is none
	// (or the TrainJob runs on the JobSet backend); PodCliques are its
	// PodCliques.
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	PodCliques   []copsev1alpha1.PodClique
	// PodsNotEnded counts, per clique of the PodCliqueSet, its pods that
	// have not ended, terminating ones included: they may still hold their
	// nodes' resources.
	PodsNotEnded map[string]int
	// NumNodes is the resolved trainer node count, nil before the runtime
	// is resolved.
	NumNodes *int32
	// TTL is the runtime snapshot's ttlSecondsAfterFinished.
	TTL *int32
	// FailurePolicy: the runtime snapshot sets template.spec.failurePolicy.
	// JobSet fails a JobSet without one at its first failed Job (reason
	// FailedJobs), and one with it once its restarts are spent
	// (ReachedMaxRestarts); the PodCliqueSet backend's failure says the
	// same.
	FailurePolicy bool
	// Unsupported is why the runtime cannot run, "" when it can.
	Unsupported string
	// TopologyUnresolved is why the PodCliqueSet backend cannot name the
	// runtime's topology level (no ClusterTopologyBinding has its key), ""
	// when it can or the TrainJob sets none.
	TopologyUnresolved string
	// Topology is where the PodCliqueSet backend's build takes the
	// replica's packing from: the existing PodCliqueSet's, else the
	// ClusterTopologyBindings.
	Topology trainjob.TopologySource
	// NotControlled says that an object of the backend's kind and the
	// TrainJob's name exists that the TrainJob does not control, "" when
	// none does: copse leaves it alone and creates nothing.
	NotControlled string
	// BackendDeleted says that the TrainJob's PodCliqueSet, recorded in
	// status.backend, is gone (confirmed by a read from the API server,
	// not the cache) or being deleted, while the TrainJob has not finished;
	// "" otherwise.
	BackendDeleted string
	Now            time.Time

	// ResolveErr is why the runtime could not be resolved, BuildErr why the
	// build could not be made; nil when it could. Either leaves the status
	// as it is: the pass carries a suspension to the backend's object and
	// fails, to be retried.
	ResolveErr, BuildErr error
	// RuntimeWrites are what the runtime's resolution writes (an adopted
	// snapshot, the runtime marked in use, its snapshot).
	RuntimeWrites runtimeWrites
	// Built is the backend's build (none for a finished TrainJob, or one
	// that cannot run); Existing what exists of its objects besides the
	// backend's object.
	Built    builtObjects
	Existing existingBuild
}

// decision is what one pass does: the status to write and what to do after.
type decision struct {
	Status trainerv1alpha1.TrainJobStatus
	// Run: the backend's object (JobSet or PodCliqueSet) should exist as
	// built (created, or rebuilt while suspended).
	Run bool
	// DeleteRun: the deadline passed; the Failed condition is written
	// first, then the backend's object is deleted.
	DeleteRun bool
	// DeleteTrainJob: the TTL after the TrainJob finished has passed.
	DeleteTrainJob bool
	// RequeueAfter is when the next deadline or TTL falls due, 0 for none.
	RequeueAfter time.Duration
}

// decide computes the status a TrainJob should have and what to do about it:
// its conditions follow its suspension, its JobSet's (or PodCliqueSet's)
// outcome and its deadline; its jobsStatus mirrors the JobSet's replicated
// jobs (or counts the PodCliqueSet's cliques as jobs); a finished
// TrainJob with a TTL is deleted once the TTL has passed since it finished.
func decide(f facts) decision {
	tj := f.TrainJob
	status := *tj.Status.DeepCopy()
	if f.NumNodes != nil {
		status.NumNodes = ptr.To(*f.NumNodes)
	}
	d := decision{}

	if !finished(status) {
		setSuspended(&status, ptr.Deref(tj.Spec.Suspend, false), f.Now)
		switch {
		case f.Unsupported != "":
			setCondition(&status, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobRuntimeNotSupportedReason, f.Unsupported, f.Now)
		case f.BackendDeleted != "":
			setCondition(&status, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobBackendDeletedReason, f.BackendDeleted, f.Now)
		case f.JobSet != nil:
			mirrorOutcome(&status, f.JobSet)
		case f.PodCliqueSet != nil:
			mirrorPodCliqueSetOutcome(&status, f.PodCliqueSet, f.PodCliques, f.FailurePolicy, f.Now)
		}
	}
	switch {
	case f.JobSet != nil:
		mirrorJobsStatus(&status, f.JobSet)
		status.Backend = backendRecord("JobSet", f.JobSet.Name, f.JobSet.UID)
	case f.PodCliqueSet != nil:
		status.JobsStatus = podCliqueSetJobsStatus(f.PodCliqueSet, f.PodCliques, f.PodsNotEnded, tj.Status.JobsStatus)
		status.Backend = backendRecord("PodCliqueSet", f.PodCliqueSet.Name, f.PodCliqueSet.UID)
	}

	if !finished(status) {
		if due, ok := deadline(tj, status); ok {
			if !f.Now.Before(due) {
				setCondition(&status, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobDeadlineExceededReason, deadlineExceededMessage, f.Now)
			} else {
				d.RequeueAfter = atLeast(due.Sub(f.Now))
			}
		}
	}

	if !finished(status) && f.Unsupported == "" {
		setTopologyUnavailable(&status, f.TopologyUnresolved, f.Now)
		if f.TopologyUnresolved != "" {
			d.RequeueAfter = sooner(d.RequeueAfter, topologyRetry)
		}
	}
	switch {
	case finished(status):
		// Nothing is retried any more.
		meta.RemoveStatusCondition(&status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
	case f.NotControlled != "":
		setCondition(&status, trainerv1alpha1.TrainJobBackendRefused, reasonNotControlled, f.NotControlled, f.Now)
		d.RequeueAfter = sooner(d.RequeueAfter, refusalRetry)
	}
	if meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobFailed) && (isDeadlineExceeded(status) || (f.JobSet == nil && f.PodCliqueSet == nil)) {
		status.JobsStatus = finalJobsStatus(status.JobsStatus, f.Backend == trainerv1alpha1.RuntimeBackendPodCliqueSet)
	}

	switch {
	case !finished(status):
		d.Run = f.NotControlled == "" && !awaitingFirstAdmission(f)
	case isDeadlineExceeded(status):
		d.DeleteRun = f.JobSet != nil || f.PodCliqueSet != nil
	}
	if finished(status) && f.TTL != nil {
		expires := finishedAt(status).Add(time.Duration(*f.TTL) * time.Second)
		if f.Now.Before(expires) {
			d.RequeueAfter = atLeast(expires.Sub(f.Now))
		} else {
			d.DeleteTrainJob = true
		}
	}
	d.Status = status
	return d
}

// awaitingFirstAdmission: Kueue queues the TrainJob (its queue-name
// label) and has not admitted it yet: it is suspended and has never had a
// backend object. Such a TrainJob gets its JobSet or PodCliqueSet when Kueue
// first resumes it, not before. Kueue derives the pod sets from the TrainJob
// and its runtime, not from that object, and while the queue waits the
// object would be one more write for each TrainJob, followed by its
// controller's writes and copse's mirror of them: on the 2 cores of the
// bench, that churn alone doubled the time to admit 32 queued TrainJobs
// (docs/performance.md). A TrainJob suspended by its author, or by Kueue
// after it ran (preemption), keeps its object, suspended, as Kubeflow
// Trainer does.
func awaitingFirstAdmission(f facts) bool {
	tj := f.TrainJob
	return ptr.Deref(tj.Spec.Suspend, false) && copsekueue.QueueName(tj) != "" &&
		tj.Status.Backend == nil && f.JobSet == nil && f.PodCliqueSet == nil
}

// backendRecord is status.backend for the object the TrainJob runs as.
func backendRecord(kind, name string, uid types.UID) *trainerv1alpha1.BackendStatus {
	return &trainerv1alpha1.BackendStatus{Kind: kind, Name: name, UID: uid}
}

// finalJobsStatus is the last jobsStatus of a failed TrainJob whose backend
// object is gone or being deleted (past the deadline, or deleted from
// outside): nothing runs or waits any more, so no job stays active, ready
// or suspended, and a job that had not finished counts as failed, as a Job
// past its activeDeadlineSeconds fails. Succeeded and failed counts stay.
// A JobSet counts a Job as active or suspended only while it has not
// finished; on the PodCliqueSet backend (oneJobEach) each entry is one
// clique, which may count as succeeded and active at once (it succeeded
// before a suspension and runs again), and it stays succeeded.
func finalJobsStatus(jobs []trainerv1alpha1.JobStatus, oneJobEach bool) []trainerv1alpha1.JobStatus {
	var out []trainerv1alpha1.JobStatus
	for _, job := range jobs {
		unfinished := max(ptr.Deref(job.Active, 0), ptr.Deref(job.Suspended, 0))
		if oneJobEach {
			unfinished = max(min(unfinished, 1-ptr.Deref(job.Succeeded, 0)-ptr.Deref(job.Failed, 0)), 0)
		}
		out = append(out, trainerv1alpha1.JobStatus{
			Name:      job.Name,
			Ready:     ptr.To[int32](0),
			Succeeded: ptr.To(ptr.Deref(job.Succeeded, 0)),
			Failed:    ptr.To(ptr.Deref(job.Failed, 0) + unfinished),
			Active:    ptr.To[int32](0),
			Suspended: ptr.To[int32](0),
		})
	}
	return out
}

// sooner is the earlier of two waits, 0 meaning none.
func sooner(current, wait time.Duration) time.Duration {
	if current == 0 || wait < current {
		return wait
	}
	return current
}

// setSuspended records a suspension, and a resume once suspended: the
// resume's transition time restarts the deadline.
func setSuspended(status *trainerv1alpha1.TrainJobStatus, suspended bool, now time.Time) {
	switch {
	case suspended:
		setCondition(status, trainerv1alpha1.TrainJobSuspended, trainerv1alpha1.TrainJobSuspendedReason, suspendedMessage, now)
	case meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobSuspended):
		c := metav1.Condition{Type: trainerv1alpha1.TrainJobSuspended, Status: metav1.ConditionFalse,
			Reason: trainerv1alpha1.TrainJobResumedReason, Message: resumedMessage, LastTransitionTime: metav1.NewTime(now)}
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

// setTopologyUnavailable reports a topology level the PodCliqueSet backend
// cannot resolve (unresolved is why), and its resolution once it was
// reported; a TrainJob that never had the problem gets no condition.
func setTopologyUnavailable(status *trainerv1alpha1.TrainJobStatus, unresolved string, now time.Time) {
	if unresolved != "" {
		setCondition(status, trainerv1alpha1.TrainJobTopologyLevelsUnavailable, trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason, unresolved, now)
		return
	}
	if meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: trainerv1alpha1.TrainJobTopologyLevelsUnavailable,
			Status: metav1.ConditionFalse, Reason: trainerv1alpha1.TrainJobTopologyLevelResolvedReason,
			Message: "spec.podGroupPolicy.workload.topologyConstraint.level is a level of a ClusterTopologyBinding", LastTransitionTime: metav1.NewTime(now)})
	}
}

// mirrorOutcome carries the JobSet's outcome over: Completed becomes
// Complete and Failed stays Failed, with the JobSet's reason and message,
// in that order: the same facts always make the same status.
func mirrorOutcome(status *trainerv1alpha1.TrainJobStatus, jobSet *jobsetv1alpha2.JobSet) {
	for _, pair := range [][2]string{
		{string(jobsetv1alpha2.JobSetCompleted), trainerv1alpha1.TrainJobComplete},
		{string(jobsetv1alpha2.JobSetFailed), trainerv1alpha1.TrainJobFailed},
	} {
		from, to := pair[0], pair[1]
		if c := meta.FindStatusCondition(jobSet.Status.Conditions, from); c != nil && c.Status == metav1.ConditionTrue {
			carried := *c
			carried.Type = to
			carried.ObservedGeneration = 0
			meta.SetStatusCondition(&status.Conditions, carried)
		}
	}
}

// mirrorJobsStatus copies the JobSet's counts per replicated job; they keep
// moving after the outcome (the last pods end), so they are copied as long
// as the JobSet exists.
func mirrorJobsStatus(status *trainerv1alpha1.TrainJobStatus, jobSet *jobsetv1alpha2.JobSet) {
	status.JobsStatus = nil
	for _, rjob := range jobSet.Status.ReplicatedJobsStatus {
		status.JobsStatus = append(status.JobsStatus, trainerv1alpha1.JobStatus{
			Name:      rjob.Name,
			Ready:     ptr.To(rjob.Ready),
			Succeeded: ptr.To(rjob.Succeeded),
			Failed:    ptr.To(rjob.Failed),
			Active:    ptr.To(rjob.Active),
			Suspended: ptr.To(rjob.Suspended),
		})
	}
}

// deadline is when activeDeadlineSeconds runs out: counted from the last
// resume, else from creation; there is none while suspended or unset.
func deadline(tj *trainerv1alpha1.TrainJob, status trainerv1alpha1.TrainJobStatus) (time.Time, bool) {
	if tj.Spec.ActiveDeadlineSeconds == 0 || ptr.Deref(tj.Spec.Suspend, false) {
		return time.Time{}, false
	}
	start := tj.CreationTimestamp.Time
	if c := meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobSuspended); c != nil && c.Status == metav1.ConditionFalse {
		start = c.LastTransitionTime.Time
	}
	if start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(tj.Spec.ActiveDeadlineSeconds) * time.Second), true
}

func setCondition(status *trainerv1alpha1.TrainJobStatus, conditionType, reason, message string, now time.Time) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: conditionType, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// finished: Complete or Failed is true; either is final.
func finished(status trainerv1alpha1.TrainJobStatus) bool {
	return meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobComplete) ||
		meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobFailed)
}

func isDeadlineExceeded(status trainerv1alpha1.TrainJobStatus) bool {
	c := meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobFailed)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason
}

// finishedAt is the transition time of the terminal condition.
func finishedAt(status trainerv1alpha1.TrainJobStatus) time.Time {
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := meta.FindStatusCondition(status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func atLeast(d time.Duration) time.Duration {
	return max(d, minRequeue)
}

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

// Steps of the pass's deletions, for errors.
const (
	stepDeadline = "deadline"
	stepTTL      = "ttl"
)

// passPlan is everything one pass writes (children.PassPlan, carried out
// by the pass's one writer) and what its settle step needs besides.
type passPlan struct {
	children.PassPlan
	// err is the pass's own failure (the runtime cannot be resolved, the
	// build cannot be made), returned once the writes are made.
	err error
	// suspended is the TrainJob's spec.suspend, by which a refused update
	// is sorted (classifyRefusal).
	suspended bool
	// waiting says why the backend's object is not rebuilt yet; ttl is the
	// TTL the TrainJob is deleted after, nil when it is not. Both are for
	// the log.
	waiting string
	ttl     *int32
}

// planPass decides, from the facts alone, everything the pass writes, in
// the writer's order:
//
//	status   decide's conditions, jobsStatus, deadline and TTL; none when
//	         the runtime cannot be resolved or the build made (the pass
//	         fails and is retried)
//	events   one per condition that became true; a deadline's deletion
//	objects  the backend's object once the deadline passed; the finished
//	         TrainJob once its TTL passed
//	own      the runtime's resolution (runtimeWrites), then the build
//	         (decideWrites), or only a suspension of the backend's object
//	         when nothing could be built
//	settle   how the build's writes went, on the status (settleWrites)
func planPass(f facts) passPlan {
	tj := f.TrainJob
	plan := passPlan{PassPlan: children.PassPlan{Observed: tj}, suspended: ptr.Deref(tj.Spec.Suspend, false)}
	if cause := cannotBuild(f); cause != nil {
		plan.Events = cannotBuildEvents(f)
		plan.OwnWrites = ownWrites(suspendOnly(f, cause))
		plan.err = cause
		return plan
	}
	d := decide(f)
	desired := tj.DeepCopy()
	desired.Status = d.Status
	plan.Status = desired
	plan.Events = transitionEvents(tj.Status, d.Status)
	plan.RequeueAfter = d.RequeueAfter
	if f.RuntimeWrites != (runtimeWrites{}) {
		plan.OwnWrites = append(plan.OwnWrites, f.RuntimeWrites)
	}
	switch {
	case d.Run && f.Built.any():
		writes := decideWrites(writeInputs{TrainJob: tj, Built: f.Built, JobSet: f.JobSet, PodCliqueSet: f.PodCliqueSet, Existing: f.Existing})
		plan.OwnWrites = append(plan.OwnWrites, buildWrites(writes.writes))
		plan.waiting = writes.waiting
		plan.Settle = settleWrites(f.Now)
	case d.Run:
		// Nothing could be built (a topology level no binding has): a
		// suspension still reaches an existing object.
		plan.OwnWrites = append(plan.OwnWrites, ownWrites(suspendOnly(f, nil))...)
	case d.DeleteRun:
		deletion, events := deleteRun(f)
		plan.Deletes = append(plan.Deletes, deletion)
		plan.Events = append(plan.Events, events...)
	}
	if d.DeleteTrainJob {
		plan.ttl = f.TTL
		plan.Deletes = append(plan.Deletes, children.Deletion{Step: stepTTL, Kind: "TrainJob",
			Objects: []client.Object{tj}, Propagation: metav1.DeletePropagationForeground})
	}
	return plan
}

// ownWrites is the writes of those set, in order.
func ownWrites(writes ...children.OwnWrite) []children.OwnWrite {
	var out []children.OwnWrite
	for _, w := range writes {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}

// cannotBuild is why the pass has nothing to build from, nil when it has.
func cannotBuild(f facts) error {
	if f.ResolveErr != nil {
		return f.ResolveErr
	}
	return f.BuildErr
}

// cannotBuildEvents say why nothing could be built: a runtime that is not
// there (not once the TrainJob finished: it needs none), or a build that
// failed.
func cannotBuildEvents(f facts) []children.Event {
	switch {
	case f.ResolveErr != nil && !finished(f.TrainJob.Status):
		return []children.Event{{Type: corev1.EventTypeWarning, Reason: reasonRuntimeUnavailable, Action: "Resolve", Message: f.ResolveErr.Error()}}
	case f.BuildErr != nil:
		return []children.Event{{Type: corev1.EventTypeWarning, Reason: reasonBuildFailed, Action: "Build", Message: f.BuildErr.Error()}}
	}
	return nil
}

// deleteRun deletes the backend's object once the deadline passed (the
// Failed condition is written first), said in an event when it is not
// being deleted already.
func deleteRun(f facts) (children.Deletion, []children.Event) {
	var obj client.Object = f.JobSet
	kind := "JobSet"
	if f.PodCliqueSet != nil {
		obj, kind = f.PodCliqueSet, "PodCliqueSet"
	}
	deletion := children.Deletion{Step: stepDeadline, Kind: kind, Objects: []client.Object{obj}}
	if obj.GetDeletionTimestamp() != nil {
		return deletion, nil
	}
	return deletion, []children.Event{{Type: corev1.EventTypeWarning, Reason: trainerv1alpha1.TrainJobDeadlineExceededReason, Action: "Delete",
		Message: fmt.Sprintf("activeDeadlineSeconds %d passed: deleting %s %s", f.TrainJob.Spec.ActiveDeadlineSeconds, kind, obj.GetName())}}
}

// suspendOnly carries a suspended TrainJob's suspension to its backend
// object when the build cannot be made (cause says why; nil when nothing
// was built for a stated reason): spec.suspend alone is set on the existing
// JobSet or PodCliqueSet, so that its pods go and a queue gets its quota
// back even while the rest of the TrainJob cannot be rebuilt. It is nil
// when there is nothing to suspend.
func suspendOnly(f facts, cause error) children.OwnWrite {
	tj := f.TrainJob
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return nil
	}
	out := suspendWrites{why: "the build could not be made"}
	if cause != nil {
		out.why += ": " + cause.Error()
	}
	for _, obj := range []client.Object{f.JobSet, f.PodCliqueSet} {
		if updated, changed := suspendedCopy(obj); changed {
			out.objects = append(out.objects, updated)
		}
	}
	if len(out.objects) == 0 {
		return nil
	}
	return out
}

// suspendedCopy is a copy of a JobSet or PodCliqueSet with spec.suspend
// true; changed is false when it was suspended already, or obj is nil.
func suspendedCopy(obj client.Object) (client.Object, bool) {
	switch o := obj.(type) {
	case *jobsetv1alpha2.JobSet:
		if o == nil || ptr.Deref(o.Spec.Suspend, false) {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	case *copsev1alpha1.PodCliqueSet:
		if o == nil || o.IsSuspended() {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	}
	return nil, false
}

// Event reasons of the TrainJob controller, besides the condition reasons.
const (
	reasonRuntimeUnavailable  = "RuntimeUnavailable"
	reasonBuildFailed         = "BuildFailed"
	reasonJobSetCreated       = "JobSetCreated"
	reasonPodCliqueSetCreated = "PodCliqueSetCreated"
	// reasonSuspendedOnly: the build could not be made, so only the
	// TrainJob's suspension was carried to its backend object.
	reasonSuspendedOnly = "SuspendedWithoutBuild"
)

// transitionEvents are the events of a status write: one per condition
// that became true, a warning for those that say something went wrong.
func transitionEvents(before, after trainerv1alpha1.TrainJobStatus) []children.Event {
	var out []children.Event
	for _, c := range after.Conditions {
		if c.Status != "True" || meta.IsStatusConditionTrue(before.Conditions, c.Type) {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Type == trainerv1alpha1.TrainJobFailed || c.Type == trainerv1alpha1.TrainJobTopologyLevelsUnavailable ||
			c.Type == trainerv1alpha1.TrainJobBackendRefused {
			eventType = corev1.EventTypeWarning
		}
		out = append(out, children.Event{Type: eventType, Reason: c.Reason, Action: c.Type, Message: c.Message})
	}
	return out
}
