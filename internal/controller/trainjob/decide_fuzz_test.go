package trainjob

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// Bits of the fuzz input's flags.
const (
	fuzzSuspended = 1 << iota
	fuzzWasSuspended
	fuzzResumed
	fuzzComplete
	fuzzFailed
	fuzzDeadlineFailed
	fuzzJobSetCompleted
	fuzzJobSetFailed
)

const (
	fuzzHasJobSet = 1 << iota
	fuzzHasTTL
	fuzzUnsupported
	// fuzzHasPodCliqueSet: the TrainJob runs on the PodCliqueSet backend;
	// fuzzJobSetCompleted and fuzzJobSetFailed then make the PodCliqueSet
	// Succeeded (with SuccessCriteriaMet when both) or Failed.
	fuzzHasPodCliqueSet
	// fuzzBackendDeleted: the recorded PodCliqueSet is gone (then there is
	// no PodCliqueSet); fuzzNotControlled: an object of the TrainJob's name
	// it does not control exists (then there is no backend object).
	fuzzBackendDeleted
	fuzzNotControlled
)

// FuzzDecide checks decide's promises on any TrainJob, JobSet and time:
// a finished TrainJob stays finished with its terminal condition; the JobSet
// runs only while the TrainJob has not finished and is deleted only past
// the deadline; the TrainJob is deleted only when finished, with a TTL, at
// or after finish+TTL; a wait is never shorter than a second.
func FuzzDecide(f *testing.F) {
	for _, tc := range decideCases() {
		f.Add(tc.flags, tc.more, tc.deadline, tc.ttl, tc.now, tc.transition)
	}
	f.Fuzz(func(t *testing.T, flags, more uint8, deadline int64, ttl int32, now, transition int64) {
		in := fuzzFacts(flags, more, deadline, ttl, now, transition)
		wasFinished := finished(in.TrainJob.Status)
		d := decide(in)

		if wasFinished {
			for _, c := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
				before := meta.FindStatusCondition(in.TrainJob.Status.Conditions, c)
				after := meta.FindStatusCondition(d.Status.Conditions, c)
				if before != nil && before.Status == metav1.ConditionTrue && (after == nil || *after != *before) {
					t.Fatalf("terminal condition %s changed: %+v -> %+v", c, before, after)
				}
			}
		}
		if d.Run && finished(d.Status) {
			t.Fatal("runs the JobSet of a finished TrainJob")
		}
		if d.DeleteRun && (!isDeadlineExceeded(d.Status) || (in.JobSet == nil && in.PodCliqueSet == nil)) {
			t.Fatalf("deletes the JobSet or PodCliqueSet without a passed deadline: %+v", d.Status.Conditions)
		}
		if in.PodCliqueSet != nil && len(d.Status.JobsStatus) != len(in.PodCliqueSet.Spec.Template.Cliques) {
			t.Fatalf("jobsStatus %v: not one entry per clique", d.Status.JobsStatus)
		}
		for _, js := range d.Status.JobsStatus {
			if in.PodCliqueSet != nil && *js.Succeeded+*js.Failed+*js.Suspended+max(*js.Active, *js.Ready) > 1 {
				t.Fatalf("jobsStatus %s counts its one Job twice: %+v", js.Name, js)
			}
		}
		if d.DeleteTrainJob {
			if !finished(d.Status) || in.TTL == nil {
				t.Fatal("deletes a TrainJob that has not finished or has no TTL")
			}
			if in.Now.Before(finishedAt(d.Status).Add(time.Duration(*in.TTL) * time.Second)) {
				t.Fatal("deletes a TrainJob before its TTL passed")
			}
		}
		if in.BackendDeleted != "" && !finished(d.Status) {
			t.Fatal("a TrainJob whose PodCliqueSet was deleted from outside has not finished")
		}
		if in.NotControlled != "" && d.Run {
			t.Fatal("builds over an object the TrainJob does not control")
		}
		if finished(d.Status) && meta.FindStatusCondition(d.Status.Conditions, trainerv1alpha1.TrainJobBackendRefused) != nil {
			t.Fatal("a finished TrainJob still says its backend object is refused")
		}
		if meta.IsStatusConditionTrue(d.Status.Conditions, trainerv1alpha1.TrainJobFailed) && in.JobSet == nil && in.PodCliqueSet == nil {
			for _, js := range d.Status.JobsStatus {
				if *js.Active != 0 || *js.Ready != 0 || *js.Suspended != 0 {
					t.Fatalf("a failed TrainJob without its backend object shows a job still running: %+v", js)
				}
			}
		}
		if d.RequeueAfter != 0 && d.RequeueAfter < minRequeue {
			t.Fatalf("waits %v, less than %v", d.RequeueAfter, minRequeue)
		}
	})
}

type decideCase struct {
	flags, more     uint8
	deadline        int64
	ttl             int32
	now, transition int64
}

// decideCases seed the fuzzer with the shapes of TestDecide.
func decideCases() []decideCase {
	return []decideCase{
		{0, 0, 0, 0, 1, 0},
		{fuzzSuspended, 0, 60, 0, 600, 0},
		{fuzzWasSuspended | fuzzResumed, 0, 60, 0, 561, 500},
		{fuzzJobSetCompleted, fuzzHasJobSet | fuzzHasTTL, 0, 0, 31, 30},
		{fuzzComplete, fuzzHasTTL, 0, 10, 33, 30},
		{fuzzFailed | fuzzDeadlineFailed, fuzzHasJobSet, 60, 0, 70, 61},
		{0, fuzzHasJobSet, 60, 0, 60, 0},
		{0, fuzzUnsupported, 0, 0, 1, 0},
		{fuzzJobSetCompleted, fuzzHasPodCliqueSet | fuzzHasTTL, 0, 0, 31, 30},
		{fuzzJobSetCompleted | fuzzJobSetFailed, fuzzHasPodCliqueSet, 0, 0, 31, 30},
		{fuzzJobSetFailed, fuzzHasPodCliqueSet, 0, 0, 31, 30},
		{fuzzSuspended, fuzzHasPodCliqueSet, 0, 0, 31, 30},
		{0, fuzzHasPodCliqueSet, 60, 0, 70, 0},
		{fuzzSuspended, fuzzBackendDeleted, 0, 0, 31, 30},
		{0, fuzzNotControlled | fuzzHasTTL, 60, 0, 10, 0},
	}
}

// fuzzFacts builds facts: times are seconds after t0 (bounded to a day),
// the deadline 0..1h, the TTL 0..1h.
func fuzzFacts(flags, more uint8, deadline int64, ttl int32, now, transition int64) facts {
	bound := func(v, n int64) int64 { return ((v % n) + n) % n }
	seconds := func(v int64) time.Time { return at(int(bound(v, 86400))) }
	tj := job(bound(deadline, 3600), flags&fuzzSuspended != 0)
	since := seconds(transition)
	add := func(c metav1.Condition) { tj.Status.Conditions = append(tj.Status.Conditions, c) }
	if flags&fuzzWasSuspended != 0 {
		status := metav1.ConditionTrue
		if flags&fuzzResumed != 0 {
			status = metav1.ConditionFalse
		}
		add(cond(trainerv1alpha1.TrainJobSuspended, status, "Suspended", since))
	}
	switch {
	case flags&fuzzComplete != 0:
		add(cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", since))
	case flags&fuzzFailed != 0:
		reason := "FailedJobs"
		if flags&fuzzDeadlineFailed != 0 {
			reason = trainerv1alpha1.TrainJobDeadlineExceededReason
		}
		add(cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, reason, since))
	}
	in := facts{TrainJob: tj, Now: seconds(now)}
	tj.Status.JobsStatus = []trainerv1alpha1.JobStatus{{Name: "node", Ready: ptr.To[int32](1), Succeeded: ptr.To[int32](0),
		Failed: ptr.To[int32](0), Active: ptr.To[int32](1), Suspended: ptr.To[int32](0)}}
	switch {
	case more&fuzzBackendDeleted != 0:
		in.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
		in.BackendDeleted = "PodCliqueSet tj was deleted"
		return withTTL(in, more, ttl)
	case more&fuzzNotControlled != 0:
		in.NotControlled = "JobSet tj exists but is not controlled by TrainJob tj"
		return withTTL(in, more, ttl)
	}
	if more&fuzzHasPodCliqueSet != 0 {
		in.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
		pcs := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 1)
		switch {
		case flags&fuzzJobSetCompleted != 0 && flags&fuzzJobSetFailed != 0:
			pcs = podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 1,
				cond(copsev1alpha1.ConditionTypeSuccessCriteriaMet, metav1.ConditionTrue, copsev1alpha1.ReasonSuccessPolicy, since))
		case flags&fuzzJobSetCompleted != 0:
			pcs = podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0)
		case flags&fuzzJobSetFailed != 0:
			pcs = podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 3,
				cond(copsev1alpha1.ConditionTypeFailed, metav1.ConditionTrue, copsev1alpha1.ReasonMaxRestartsExceeded, since))
		}
		pcs.Spec.Suspend = ptr.To(flags&fuzzSuspended != 0)
		in.PodCliqueSet = pcs
		in.PodCliques = []copsev1alpha1.PodClique{podClique("node", 0, 2, 1, "0"), podClique("launcher", 0, 1, 0, "")}
	} else if more&fuzzHasJobSet != 0 {
		var conditions []metav1.Condition
		if flags&fuzzJobSetCompleted != 0 {
			conditions = append(conditions, cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", since))
		}
		if flags&fuzzJobSetFailed != 0 {
			conditions = append(conditions, cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", since))
		}
		in.JobSet = jobSet(conditions...)
	}
	if more&fuzzUnsupported != 0 {
		in.Unsupported = "not supported"
	}
	return withTTL(in, more, ttl)
}

// withTTL gives the facts a TTL of 0..1h when the flags ask for one.
func withTTL(in facts, more uint8, ttl int32) facts {
	if more&fuzzHasTTL != 0 {
		in.TTL = ptr.To(((ttl % 3600) + 3600) % 3600)
	}
	return in
}
