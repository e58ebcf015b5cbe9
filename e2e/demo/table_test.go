package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func pcs(name string, wt copsev1alpha1.WorkloadType, phase copsev1alpha1.PodCliqueSetPhase, restarts int32, failedReason string) copsev1alpha1.PodCliqueSet {
	p := copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.WorkloadType = wt
	p.Status.Phase = phase
	p.Status.RestartCount = restarts
	if failedReason != "" {
		p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: "True", Reason: failedReason}}
	}
	return p
}

func pod(pcsName string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labels.PartOfKey: pcsName}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// trainJob is a TrainJob of runtime copse-torch created at created, with
// the given conditions (all True) and jobsStatus.
func trainJob(name string, created time.Time, nodes *int32, jobs []trainerv1alpha1.JobStatus, conditions ...metav1.Condition) trainerv1alpha1.TrainJob {
	tj := trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	tj.Spec.RuntimeRef.Name = "copse-torch"
	tj.Status.NumNodes = nodes
	tj.Status.JobsStatus = jobs
	for _, c := range conditions {
		c.Status = metav1.ConditionTrue
		tj.Status.Conditions = append(tj.Status.Conditions, c)
	}
	return tj
}

// jobCounts is one replicated job's counts: active, ready, succeeded, failed, suspended.
func jobCounts(name string, active, ready, succeeded, failed, suspended int32) trainerv1alpha1.JobStatus {
	return trainerv1alpha1.JobStatus{Name: name, Active: ptr.To(active), Ready: ptr.To(ready),
		Succeeded: ptr.To(succeeded), Failed: ptr.To(failed), Suspended: ptr.To(suspended)}
}

func TestRowsAndTable(t *testing.T) {
	sets := []copsev1alpha1.PodCliqueSet{
		pcs("serve", copsev1alpha1.WorkloadTypeInference, copsev1alpha1.PodCliqueSetPhaseRunning, 0, ""),
		pcs("ok", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseSucceeded, 1, ""),
		pcs("broken", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseFailed, 2, copsev1alpha1.ReasonMaxRestartsExceeded),
	}
	pods := []corev1.Pod{
		pod("serve", corev1.PodRunning), pod("serve", corev1.PodPending),
		pod("ok", corev1.PodSucceeded), pod("ok", corev1.PodSucceeded),
		pod("broken", corev1.PodFailed),
	}
	rows := rowsOf(sets, pods)
	if rows[0].name != "broken" || rows[1].name != "ok" || rows[2].name != "serve" {
		t.Fatalf("order: %+v", rows)
	}
	if rows[2].running != 1 || rows[2].pending != 1 || rows[1].succeeded != 2 || rows[0].failed != 1 {
		t.Errorf("pod counts: %+v", rows)
	}
	out := view{workloads: rows}.render(time.Now())
	for _, want := range []string{"WORKLOAD", "broken", "MaxRestartsExceeded", "Succeeded", "Inference"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TRAINJOB") {
		t.Errorf("a view without TrainJobs has no TrainJob table:\n%s", out)
	}
}

func TestTrainJobState(t *testing.T) {
	complete := metav1.Condition{Type: trainerv1alpha1.TrainJobComplete, Reason: "AllJobsCompleted"}
	failed := metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Reason: "FailedJobs"}
	suspended := metav1.Condition{Type: trainerv1alpha1.TrainJobSuspended, Reason: trainerv1alpha1.TrainJobSuspendedReason}
	resumed := metav1.Condition{Type: trainerv1alpha1.TrainJobSuspended, Status: metav1.ConditionFalse, Reason: trainerv1alpha1.TrainJobResumedReason}
	active := []trainerv1alpha1.JobStatus{jobCounts("node", 1, 0, 0, 0, 0)}
	done := []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 1, 0, 0)}
	for _, tc := range []struct {
		name   string
		status trainerv1alpha1.TrainJobStatus
		want   string
	}{
		{"no JobSet status yet", trainerv1alpha1.TrainJobStatus{}, trainJobCreated},
		{"a Job of the JobSet is active", trainerv1alpha1.TrainJobStatus{JobsStatus: active}, trainJobRunning},
		{"resumed and active: the False Suspended condition is not a state", trainerv1alpha1.TrainJobStatus{
			JobsStatus: active, Conditions: []metav1.Condition{resumed}}, trainJobRunning},
		{"suspended", trainerv1alpha1.TrainJobStatus{Conditions: []metav1.Condition{trueCondition(suspended)}}, trainerv1alpha1.TrainJobSuspended},
		{"complete", trainerv1alpha1.TrainJobStatus{JobsStatus: done, Conditions: []metav1.Condition{trueCondition(complete)}}, trainerv1alpha1.TrainJobComplete},
		{"failed while pods still end: the terminal condition wins", trainerv1alpha1.TrainJobStatus{
			JobsStatus: active, Conditions: []metav1.Condition{trueCondition(failed)}}, trainerv1alpha1.TrainJobFailed},
		{"failed while suspended: the terminal condition wins", trainerv1alpha1.TrainJobStatus{
			Conditions: []metav1.Condition{trueCondition(suspended), trueCondition(failed)}}, trainerv1alpha1.TrainJobFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trainJobState(tc.status); got != tc.want {
				t.Errorf("trainJobState = %q, want %q", got, tc.want)
			}
		})
	}
}

func trueCondition(c metav1.Condition) metav1.Condition {
	c.Status = metav1.ConditionTrue
	return c
}

func TestJobsSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []trainerv1alpha1.JobStatus
		want string
	}{
		{"none reported yet", nil, "-"},
		{"all counts zero", []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 0, 0, 0)}, "node: -"},
		{"only non-zero counts, in a fixed order", []trainerv1alpha1.JobStatus{jobCounts("node", 1, 1, 0, 0, 0)}, "node: 1 active, 1 ready"},
		{"every replicated job", []trainerv1alpha1.JobStatus{
			jobCounts("dataset-initializer", 0, 0, 1, 0, 0), jobCounts("node", 0, 0, 0, 1, 0)},
			"dataset-initializer: 1 succeeded; node: 1 failed"},
		{"suspended", []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 0, 0, 2)}, "node: 2 suspended"},
		{"nil counts read as zero", []trainerv1alpha1.JobStatus{{Name: "node", Succeeded: ptr.To[int32](1)}}, "node: 1 succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jobsSummary(tc.jobs); got != tc.want {
				t.Errorf("jobsSummary = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTrainJobTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	trainJobs := []trainerv1alpha1.TrainJob{
		trainJob("mnist-ddp", now.Add(-42*time.Second), ptr.To[int32](2), []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 1, 0, 0)},
			metav1.Condition{Type: trainerv1alpha1.TrainJobComplete, Reason: "AllJobsCompleted", Message: "jobset completed successfully"}),
		trainJob("bert-crash", now.Add(-3*time.Minute), ptr.To[int32](2), []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 0, 1, 0)},
			metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Reason: "FailedJobs", Message: "jobset failed due to one or more job failures"}),
		trainJob("fresh", now, nil, nil),
	}
	rows := trainJobRowsOf(trainJobs)
	if rows[0].name != "bert-crash" || rows[1].name != "fresh" || rows[2].name != "mnist-ddp" {
		t.Fatalf("rows are sorted by name: %+v", rows)
	}
	if rows[0].reason != "FailedJobs" || rows[0].message != "jobset failed due to one or more job failures" || rows[2].reason != "AllJobsCompleted" {
		t.Errorf("reason and message come from the terminal condition: %+v", rows)
	}

	out := view{trainJobs: rows}.render(now)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// The workload table's header, a blank line, then the TrainJob table.
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "WORKLOAD") || lines[1] != "" {
		t.Fatalf("tables:\n%s", out)
	}
	for i, want := range [][]string{
		{"TRAINJOB", "STATE", "RUNTIME", "NODES", "JOBS", "REASON", "AGE"},
		{"bert-crash", "Failed", "copse-torch", "2", "node:", "1", "failed", "FailedJobs", "3m"},
		{"fresh", "Created", "copse-torch", "-", "-", "-", "0s"},
		{"mnist-ddp", "Complete", "copse-torch", "2", "node:", "1", "succeeded", "AllJobsCompleted", "42s"},
	} {
		if got := strings.Fields(lines[2+i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want fields %q", 2+i, lines[2+i], want)
		}
	}
	// Columns line up: every row's STATE starts where the header's does.
	col := strings.Index(lines[2], "STATE")
	for _, line := range lines[3:] {
		if line[col-1] != ' ' || line[col] == ' ' {
			t.Errorf("STATE column not aligned at %d in %q", col, line)
		}
	}
}

func TestSamplesEnded(t *testing.T) {
	now := time.Now()
	complete := metav1.Condition{Type: trainerv1alpha1.TrainJobComplete, Reason: "AllJobsCompleted"}
	failed := metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Reason: "FailedJobs"}
	applied := []appliedObject{
		{file: "runtime.yaml", kind: kindClusterTrainingRuntime, name: "copse-torch"},
		{file: "ok.yaml", kind: kindPodCliqueSet, name: "ok"},
		{file: "serve.yaml", kind: kindPodCliqueSet, name: "serve"},
		{file: "tj-ok.yaml", kind: kindTrainJob, name: "tj-ok"},
		{file: "tj-broken.yaml", kind: kindTrainJob, name: "tj-broken"},
	}
	endedSets := func() []copsev1alpha1.PodCliqueSet {
		return []copsev1alpha1.PodCliqueSet{
			pcs("ok", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseSucceeded, 0, ""),
			pcs("serve", copsev1alpha1.WorkloadTypeInference, copsev1alpha1.PodCliqueSetPhaseRunning, 0, ""),
		}
	}
	endedTrainJobs := func() []trainerv1alpha1.TrainJob {
		return []trainerv1alpha1.TrainJob{
			trainJob("tj-ok", now, ptr.To[int32](2), nil, complete),
			trainJob("tj-broken", now, ptr.To[int32](2), nil, failed),
		}
	}
	for _, tc := range []struct {
		name      string
		sets      func([]copsev1alpha1.PodCliqueSet) []copsev1alpha1.PodCliqueSet
		trainJobs func([]trainerv1alpha1.TrainJob) []trainerv1alpha1.TrainJob
		want      bool
	}{
		{name: "every Training workload terminal, every TrainJob Complete or Failed, Inference running", want: true},
		{name: "a Training workload still running", sets: func(s []copsev1alpha1.PodCliqueSet) []copsev1alpha1.PodCliqueSet {
			s[0].Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
			return s
		}},
		{name: "an applied PodCliqueSet not listed yet", sets: func(s []copsev1alpha1.PodCliqueSet) []copsev1alpha1.PodCliqueSet { return s[1:] }},
		{name: "a TrainJob still running", trainJobs: func(tjs []trainerv1alpha1.TrainJob) []trainerv1alpha1.TrainJob {
			tjs[1].Status.Conditions = nil
			tjs[1].Status.JobsStatus = []trainerv1alpha1.JobStatus{jobCounts("node", 1, 1, 0, 0, 0)}
			return tjs
		}},
		{name: "a TrainJob suspended has not ended", trainJobs: func(tjs []trainerv1alpha1.TrainJob) []trainerv1alpha1.TrainJob {
			tjs[0].Status.Conditions = []metav1.Condition{{Type: trainerv1alpha1.TrainJobSuspended, Status: metav1.ConditionTrue}}
			return tjs
		}},
		{name: "an applied TrainJob not listed yet", trainJobs: func(tjs []trainerv1alpha1.TrainJob) []trainerv1alpha1.TrainJob { return tjs[:1] }},
		{name: "objects the demo did not apply do not count", trainJobs: func(tjs []trainerv1alpha1.TrainJob) []trainerv1alpha1.TrainJob {
			return append(tjs, trainJob("someone-elses", now, nil, nil))
		}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets, trainJobs := endedSets(), endedTrainJobs()
			if tc.sets != nil {
				sets = tc.sets(sets)
			}
			if tc.trainJobs != nil {
				trainJobs = tc.trainJobs(trainJobs)
			}
			if got := samplesEnded(applied, sets, trainJobs); got != tc.want {
				t.Errorf("samplesEnded = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	now := time.Now()
	applied := []appliedObject{
		{file: "trainjob-runtime.yaml", kind: kindClusterTrainingRuntime, name: "copse-torch"},
		{file: "inference.yaml", kind: kindPodCliqueSet, name: "serve"},
		{file: "training-exhausts-restarts.yaml", kind: kindPodCliqueSet, name: "broken"},
		{file: "training-restarts-once.yaml", kind: kindPodCliqueSet, name: "flaky"},
		{file: "training-succeeds.yaml", kind: kindPodCliqueSet, name: "ok"},
		{file: "trainjob-fails.yaml", kind: kindTrainJob, name: "bert-crash"},
		{file: "trainjob-succeeds.yaml", kind: kindTrainJob, name: "mnist-ddp"},
		{file: "trainjob-gone.yaml", kind: kindTrainJob, name: "gone"},
		{file: "quota.yaml", kind: "ResourceQuota", name: "gpus"},
	}
	v := newView(
		[]copsev1alpha1.PodCliqueSet{
			pcs("serve", copsev1alpha1.WorkloadTypeInference, copsev1alpha1.PodCliqueSetPhaseRunning, 0, ""),
			pcs("broken", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseFailed, 2, copsev1alpha1.ReasonMaxRestartsExceeded),
			pcs("flaky", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseSucceeded, 1, ""),
			pcs("ok", copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.PodCliqueSetPhaseSucceeded, 0, ""),
		},
		[]corev1.Pod{pod("serve", corev1.PodRunning), pod("flaky", corev1.PodSucceeded), pod("broken", corev1.PodFailed)},
		[]trainerv1alpha1.TrainJob{
			trainJob("bert-crash", now, ptr.To[int32](2), []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 0, 1, 0)},
				metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Reason: "FailedJobs", Message: "jobset failed due to one or more job failures"}),
			trainJob("mnist-ddp", now, ptr.To[int32](2), []trainerv1alpha1.JobStatus{jobCounts("node", 0, 0, 1, 0, 0)},
				metav1.Condition{Type: trainerv1alpha1.TrainJobComplete, Reason: "AllJobsCompleted"}),
		}, nil)
	out := summary(applied, v, nil)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(applied)+1 {
		t.Fatalf("one line per applied object, after the header:\n%s", out)
	}
	for i, want := range []string{
		"trainjob-runtime.yaml ClusterTrainingRuntime copse-torch runtime of 2 TrainJobs",
		"inference.yaml PodCliqueSet serve Inference Running, serving until deleted (pods: 0 succeeded, 0 failed, 1 running, 0 pending)",
		"training-exhausts-restarts.yaml PodCliqueSet broken Training Failed: MaxRestartsExceeded after 2 restarts (pods: 0 succeeded, 1 failed, 0 running, 0 pending)",
		"training-restarts-once.yaml PodCliqueSet flaky Training Succeeded with 1 restart (pods: 1 succeeded, 0 failed, 0 running, 0 pending)",
		"training-succeeds.yaml PodCliqueSet ok Training Succeeded with no restart (pods: 0 succeeded, 0 failed, 0 running, 0 pending)",
		"trainjob-fails.yaml TrainJob bert-crash Failed on copse-torch, 2 nodes: FailedJobs (jobset failed due to one or more job failures); jobs node: 1 failed",
		"trainjob-succeeds.yaml TrainJob mnist-ddp Complete on copse-torch, 2 nodes: AllJobsCompleted; jobs node: 1 succeeded",
		"trainjob-gone.yaml TrainJob gone not found",
		"quota.yaml ResourceQuota gpus applied",
	} {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != want {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got, want)
		}
	}
}
