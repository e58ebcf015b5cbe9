package trainjob

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
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
