package trainjob

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// job is a TrainJob created at t0 with the given deadline and suspension.
func job(deadline int64, suspend bool, conditions ...metav1.Condition) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tj", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       trainerv1alpha1.TrainJobSpec{ActiveDeadlineSeconds: deadline, Suspend: ptr.To(suspend)},
		Status:     trainerv1alpha1.TrainJobStatus{Conditions: conditions},
	}
}

func cond(conditionType string, status metav1.ConditionStatus, reason string, since time.Time) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)}
}

func jobSet(conditions ...metav1.Condition) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{
		Conditions: conditions,
		ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{
			{Name: "node", Ready: 2, Active: 2},
		},
	}}
}

// outcome is what a decision amounts to, for the table.
type outcome struct {
	Conditions     map[string]string // type -> status/reason
	Run            bool
	DeleteRun      bool
	DeleteTrainJob bool
	RequeueAfter   time.Duration
}

func summarize(d decision) outcome {
	o := outcome{Conditions: map[string]string{}, Run: d.Run, DeleteRun: d.DeleteRun,
		DeleteTrainJob: d.DeleteTrainJob, RequeueAfter: d.RequeueAfter}
	for _, c := range d.Status.Conditions {
		o.Conditions[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return o
}

func TestDecide(t *testing.T) {
	completed := cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", at(30))
	failed := cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", at(30))
	cases := []struct {
		name string
		in   facts
		want outcome
	}{
		{"a new TrainJob runs its JobSet and has no condition",
			facts{TrainJob: job(0, false), Now: at(1)},
			outcome{Conditions: map[string]string{}, Run: true}},
		{"suspended: Suspended=True, the JobSet kept (suspended by the build)",
			facts{TrainJob: job(0, true), Now: at(1)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}, Run: true}},
		{"resumed: Suspended=False reason Resumed",
			facts{TrainJob: job(0, false, cond("Suspended", metav1.ConditionTrue, "Suspended", at(0))), Now: at(5)},
			outcome{Conditions: map[string]string{"Suspended": "False/Resumed"}, Run: true}},
		{"the JobSet completed: Complete with JobSet's reason",
			facts{TrainJob: job(0, false), JobSet: jobSet(completed), Now: at(31)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}},
		{"the JobSet failed: Failed with JobSet's reason",
			facts{TrainJob: job(0, false), JobSet: jobSet(failed), Now: at(31)},
			outcome{Conditions: map[string]string{"Failed": "True/FailedJobs"}}},
		{"a Complete TrainJob stays Complete when its JobSet later reports Failed",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(30))), JobSet: jobSet(failed), Now: at(40)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}},
		{"before the deadline: runs, and is woken at the deadline",
			facts{TrainJob: job(60, false), Now: at(20)},
			outcome{Conditions: map[string]string{}, Run: true, RequeueAfter: 40 * time.Second}},
		{"past the deadline: Failed DeadlineExceeded and the JobSet deleted",
			facts{TrainJob: job(60, false), JobSet: jobSet(), Now: at(61)},
			outcome{Conditions: map[string]string{"Failed": "True/DeadlineExceeded"}, DeleteRun: true}},
		{"at the deadline exactly: failed (the deadline is not a grace period)",
			facts{TrainJob: job(60, false), JobSet: jobSet(), Now: at(60)},
			outcome{Conditions: map[string]string{"Failed": "True/DeadlineExceeded"}, DeleteRun: true}},
		{"past the deadline with the JobSet already gone: nothing left to delete",
			facts{TrainJob: job(60, false, cond("Failed", metav1.ConditionTrue, "DeadlineExceeded", at(61))), Now: at(70)},
			outcome{Conditions: map[string]string{"Failed": "True/DeadlineExceeded"}}},
		{"suspended past the deadline: no timer while suspended",
			facts{TrainJob: job(60, true), Now: at(600)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}, Run: true}},
		{"resumed at 500: the deadline counts from the resume",
			facts{TrainJob: job(60, false, cond("Suspended", metav1.ConditionFalse, "Resumed", at(500))), Now: at(530)},
			outcome{Conditions: map[string]string{"Suspended": "False/Resumed"}, Run: true, RequeueAfter: 30 * time.Second}},
		{"resumed at 500, now 561: failed a full deadline after the resume",
			facts{TrainJob: job(60, false, cond("Suspended", metav1.ConditionFalse, "Resumed", at(500))), JobSet: jobSet(), Now: at(561)},
			outcome{Conditions: map[string]string{"Suspended": "False/Resumed", "Failed": "True/DeadlineExceeded"}, DeleteRun: true}},
		{"finished with a TTL not yet passed: woken when it passes",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(30))), TTL: ptr.To[int32](10), Now: at(33)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}, RequeueAfter: 7 * time.Second}},
		{"finished with a TTL passed: deleted",
			facts{TrainJob: job(0, false, cond("Failed", metav1.ConditionTrue, "FailedJobs", at(30))), TTL: ptr.To[int32](10), Now: at(40)},
			outcome{Conditions: map[string]string{"Failed": "True/FailedJobs"}, DeleteTrainJob: true}},
		{"TTL 0: deleted as soon as it finishes",
			facts{TrainJob: job(0, false), JobSet: jobSet(completed), TTL: ptr.To[int32](0), Now: at(31)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}, DeleteTrainJob: true}},
		{"no TTL: a finished TrainJob is kept",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(30))), Now: at(100000)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}},
		{"an unsupported runtime fails the TrainJob with TrainingRuntimeNotSupported",
			facts{TrainJob: job(0, false), Unsupported: "mlPolicy.flux is not supported by copse yet", Now: at(1)},
			outcome{Conditions: map[string]string{"Failed": "True/TrainingRuntimeNotSupported"}}},
		{"a topology level no binding has: TopologyLevelsUnavailable, no failure, retried",
			facts{TrainJob: job(0, false), TopologyUnresolved: "level x is the key of no level", Now: at(1)},
			outcome{Conditions: map[string]string{"TopologyLevelsUnavailable": "True/TopologyLevelUnresolved"}, Run: true, RequeueAfter: topologyRetry}},
		{"a topology level no binding has, deadline sooner: woken at the deadline",
			facts{TrainJob: job(10, false), TopologyUnresolved: "level x is the key of no level", Now: at(1)},
			outcome{Conditions: map[string]string{"TopologyLevelsUnavailable": "True/TopologyLevelUnresolved"}, Run: true, RequeueAfter: 9 * time.Second}},
		{"the level resolved later: the condition turns False",
			facts{TrainJob: job(0, false, cond("TopologyLevelsUnavailable", metav1.ConditionTrue, "TopologyLevelUnresolved", at(1))), Now: at(5)},
			outcome{Conditions: map[string]string{"TopologyLevelsUnavailable": "False/TopologyLevelResolved"}, Run: true}},
		{"an unsupported runtime wins over an unresolved level",
			facts{TrainJob: job(0, false), Unsupported: "mlPolicy.flux is not supported", TopologyUnresolved: "level x", Now: at(1)},
			outcome{Conditions: map[string]string{"Failed": "True/TrainingRuntimeNotSupported"}}},
		{"a TTL due in the past on a clock behind the API server's: at least a second's wait",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(30))), TTL: ptr.To[int32](10), Now: at(39).Add(999 * time.Millisecond)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}, RequeueAfter: time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(decide(tc.in))); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideMirrorsTheJobSetsReplicatedJobs(t *testing.T) {
	d := decide(facts{TrainJob: job(0, false), JobSet: jobSet(), NumNodes: ptr.To[int32](2), Now: at(1)})
	want := []trainerv1alpha1.JobStatus{{Name: "node", Ready: ptr.To[int32](2), Succeeded: ptr.To[int32](0),
		Failed: ptr.To[int32](0), Active: ptr.To[int32](2), Suspended: ptr.To[int32](0)}}
	if diff := cmp.Diff(want, d.Status.JobsStatus); diff != "" {
		t.Errorf("jobsStatus (-want +got):\n%s", diff)
	}
	if got := ptr.Deref(d.Status.NumNodes, -1); got != 2 {
		t.Errorf("numNodes %d, want 2", got)
	}
}

func TestDecideKeepsATransitionTime(t *testing.T) {
	suspended := cond("Suspended", metav1.ConditionTrue, "Suspended", at(3))
	d := decide(facts{TrainJob: job(0, true, suspended), Now: at(50)})
	if got := meta.FindStatusCondition(d.Status.Conditions, "Suspended").LastTransitionTime.Time; !got.Equal(at(3)) {
		t.Errorf("Suspended transition %v, want the original %v: a pass must not move it", got, at(3))
	}
}
