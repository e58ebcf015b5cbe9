package trainjob

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

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
		if d.RunJobSet && finished(d.Status) {
			t.Fatal("runs the JobSet of a finished TrainJob")
		}
		if d.DeleteJobSet && (!isDeadlineExceeded(d.Status) || in.JobSet == nil) {
			t.Fatalf("deletes the JobSet without a passed deadline: %+v", d.Status.Conditions)
		}
		if d.DeleteTrainJob {
			if !finished(d.Status) || in.TTL == nil {
				t.Fatal("deletes a TrainJob that has not finished or has no TTL")
			}
			if in.Now.Before(finishedAt(d.Status).Add(time.Duration(*in.TTL) * time.Second)) {
				t.Fatal("deletes a TrainJob before its TTL passed")
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
	if more&fuzzHasJobSet != 0 {
		var conditions []metav1.Condition
		if flags&fuzzJobSetCompleted != 0 {
			conditions = append(conditions, cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", since))
		}
		if flags&fuzzJobSetFailed != 0 {
			conditions = append(conditions, cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", since))
		}
		in.JobSet = jobSet(conditions...)
	}
	if more&fuzzHasTTL != 0 {
		in.TTL = ptr.To(int32(bound(int64(ttl), 3600)))
	}
	if more&fuzzUnsupported != 0 {
		in.Unsupported = "not supported"
	}
	return in
}
