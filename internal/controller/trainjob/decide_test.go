package trainjob

import (
	"strconv"
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
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

// queuedJob labels tj with a Kueue LocalQueue.
func queuedJob(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	tj.Labels = map[string]string{copsekueue.QueueNameLabel: "team"}
	return tj
}

// withBackend records a JobSet in tj's status.backend.
func withBackend(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	tj.Status.Backend = backendRecord("JobSet", tj.Name, "uid-1")
	return tj
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
		{"queued by Kueue and not yet admitted: Suspended=True, no backend object yet",
			facts{TrainJob: queuedJob(job(0, true)), Now: at(1)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}}},
		{"queued, admitted once (its backend recorded), suspended again: the object is kept",
			facts{TrainJob: withBackend(queuedJob(job(0, true))), Now: at(1)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}, Run: true}},
		{"queued, suspended, with a JobSet (built before copse deferred it): the JobSet is kept",
			facts{TrainJob: queuedJob(job(0, true)), JobSet: jobSet(), Now: at(1)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}, Run: true}},
		{"queued and admitted (resumed): the backend object is built",
			facts{TrainJob: queuedJob(job(0, false)), Now: at(1)},
			outcome{Conditions: map[string]string{}, Run: true}},
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

func TestDecideOnTheBackendObject(t *testing.T) {
	deleted := "PodCliqueSet tj was deleted before the TrainJob finished"
	notControlled := "PodCliqueSet tj exists but is not controlled by TrainJob tj"
	refusedBefore := cond(trainerv1alpha1.TrainJobBackendRefused, metav1.ConditionTrue, reasonResourceQuota, at(1))
	cases := []struct {
		name string
		in   facts
		want outcome
	}{
		{"its PodCliqueSet deleted from outside: Failed BackendDeleted, nothing created again",
			facts{TrainJob: job(0, false), Backend: trainerv1alpha1.RuntimeBackendPodCliqueSet, BackendDeleted: deleted, Now: at(10)},
			outcome{Conditions: map[string]string{"Failed": "True/BackendDeleted"}}},
		{"suspended, its PodCliqueSet deleted from outside: the same failure",
			facts{TrainJob: job(0, true), Backend: trainerv1alpha1.RuntimeBackendPodCliqueSet, BackendDeleted: deleted, Now: at(10)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended", "Failed": "True/BackendDeleted"}}},
		{"a finished TrainJob whose PodCliqueSet is gone stays as it finished",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(5))), BackendDeleted: deleted, Now: at(10)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}},
		{"an object of its name it does not control: BackendRefused NotControlled, nothing created, looked at again",
			facts{TrainJob: job(0, false), NotControlled: notControlled, Now: at(10)},
			outcome{Conditions: map[string]string{"BackendRefused": "True/NotControlled"}, RequeueAfter: refusalRetry}},
		{"an object it does not control, deadline sooner: woken at the deadline",
			facts{TrainJob: job(15, false), NotControlled: notControlled, Now: at(10)},
			outcome{Conditions: map[string]string{"BackendRefused": "True/NotControlled"}, RequeueAfter: 5 * time.Second}},
		{"a refusal not yet resolved is kept while the TrainJob runs (settle clears it)",
			facts{TrainJob: job(0, false, refusedBefore), Now: at(10)},
			outcome{Conditions: map[string]string{"BackendRefused": "True/ResourceQuota"}, Run: true}},
		{"a refused TrainJob past its deadline fails, and BackendRefused goes (nothing is retried)",
			facts{TrainJob: job(5, false, refusedBefore), Now: at(10)},
			outcome{Conditions: map[string]string{"Failed": "True/DeadlineExceeded"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(decide(tc.in))); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideRecordsTheBackendObject(t *testing.T) {
	js := jobSet()
	js.Name, js.UID = "tj", "js-uid"
	pcs := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0)
	pcs.UID = "pcs-uid"
	recorded := &trainerv1alpha1.BackendStatus{Kind: "PodCliqueSet", Name: "tj", UID: "pcs-uid"}
	cases := []struct {
		name string
		in   facts
		want *trainerv1alpha1.BackendStatus
	}{
		{"none yet: nothing recorded", facts{TrainJob: job(0, false), Now: at(1)}, nil},
		{"a JobSet", facts{TrainJob: job(0, false), JobSet: js, Now: at(1)}, &trainerv1alpha1.BackendStatus{Kind: "JobSet", Name: "tj", UID: "js-uid"}},
		{"a PodCliqueSet", facts{TrainJob: job(0, false), PodCliqueSet: pcs, Now: at(1)}, recorded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decide(tc.in).Status.Backend); diff != "" {
				t.Errorf("status.backend (-want +got):\n%s", diff)
			}
		})
	}
	// The record stays once the object is gone: it is what tells a
	// deletion from outside from an object not created yet.
	tj := job(0, false)
	tj.Status.Backend = recorded
	if got := decide(facts{TrainJob: tj, Now: at(2)}).Status.Backend; !cmp.Equal(got, recorded) {
		t.Errorf("status.backend %+v after the object is gone, want %+v kept", got, recorded)
	}
}

// TestDecideFinalJobsStatus: a failed TrainJob whose backend object is
// deleted (past its deadline, or from outside) keeps its last jobsStatus,
// with nothing left active, ready or suspended; what had not finished
// counts as failed.
func TestDecideFinalJobsStatus(t *testing.T) {
	counts := func(name string, ready, succeeded, failed, active, suspended int32) trainerv1alpha1.JobStatus {
		return trainerv1alpha1.JobStatus{Name: name, Ready: ptr.To(ready), Succeeded: ptr.To(succeeded), Failed: ptr.To(failed),
			Active: ptr.To(active), Suspended: ptr.To(suspended)}
	}
	withJobs := func(tj *trainerv1alpha1.TrainJob, jobs ...trainerv1alpha1.JobStatus) *trainerv1alpha1.TrainJob {
		tj.Status.JobsStatus = jobs
		return tj
	}
	deadlineFailed := cond("Failed", metav1.ConditionTrue, "DeadlineExceeded", at(61))
	runningJobSet := jobSet() // node: 2 ready, 2 active
	runningPCS := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0)
	pcsJobs := []trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 1, 0), counts("node", 1, 0, 0, 1, 0)}
	cases := []struct {
		name string
		in   facts
		want []trainerv1alpha1.JobStatus
	}{
		{"JobSet backend, the pass that fails it for the deadline: the running Jobs count as failed",
			facts{TrainJob: job(60, false), JobSet: runningJobSet, Now: at(61)},
			[]trainerv1alpha1.JobStatus{counts("node", 0, 0, 2, 0, 0)}},
		{"JobSet backend, the JobSet deleted for the deadline: the last jobsStatus made final",
			facts{TrainJob: withJobs(job(60, false, deadlineFailed), counts("node", 2, 0, 0, 2, 0)), Now: at(70)},
			[]trainerv1alpha1.JobStatus{counts("node", 0, 0, 2, 0, 0)}},
		{"final already: unchanged",
			facts{TrainJob: withJobs(job(60, false, deadlineFailed), counts("node", 0, 0, 2, 0, 0)), Now: at(80)},
			[]trainerv1alpha1.JobStatus{counts("node", 0, 0, 2, 0, 0)}},
		{"PodCliqueSet backend, past the deadline: a clique that succeeded stays succeeded, one that ran counts as failed",
			facts{TrainJob: withJobs(job(60, false), pcsJobs...), Backend: trainerv1alpha1.RuntimeBackendPodCliqueSet,
				PodCliqueSet: runningPCS, PodCliques: []copsev1alpha1.PodClique{podClique("node", 1, 2, 2, "")},
				PodsNotEnded: map[string]int{"node": 2}, Now: at(61)},
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 0), counts("node", 0, 0, 1, 0, 0)}},
		{"PodCliqueSet backend, the PodCliqueSet gone after the deadline: final, a clique carried as succeeded stays succeeded",
			facts{TrainJob: withJobs(job(60, false, deadlineFailed), pcsJobs...), Backend: trainerv1alpha1.RuntimeBackendPodCliqueSet, Now: at(70)},
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 1, 0, 0)}},
		{"PodCliqueSet backend, deleted from outside while suspended: the suspended cliques count as failed",
			facts{TrainJob: withJobs(job(0, true), counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 0, 0, 1)),
				Backend: trainerv1alpha1.RuntimeBackendPodCliqueSet, BackendDeleted: "deleted", Now: at(70)},
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 1, 0, 0)}},
		{"a JobSet that failed on its own keeps JobSet's counts",
			facts{TrainJob: job(0, false), JobSet: jobSet(cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", at(30))), Now: at(31)},
			[]trainerv1alpha1.JobStatus{counts("node", 2, 0, 0, 2, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decide(tc.in).Status.JobsStatus); diff != "" {
				t.Errorf("jobsStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideOutcomeTimes: Complete and Failed carry the time the backend
// reached its end, not the time copse noticed, and the TTL counts from it.
func TestDecideOutcomeTimes(t *testing.T) {
	succeededPodClique := func(clique string, finished time.Time) copsev1alpha1.PodClique {
		pclq := podClique(clique, 0, 0, 0, "0", cond(copsev1alpha1.ConditionTypeSucceeded, metav1.ConditionTrue, copsev1alpha1.ReasonAllPodsSucceeded, at(50)))
		pclq.Status.LastSucceededTime = ptr.To(metav1.NewTime(finished))
		return pclq
	}
	criteriaMet := cond(copsev1alpha1.ConditionTypeSuccessCriteriaMet, metav1.ConditionTrue, copsev1alpha1.ReasonSuccessPolicy, at(22))
	restartsExceeded := cond(copsev1alpha1.ConditionTypeFailed, metav1.ConditionTrue, copsev1alpha1.ReasonMaxRestartsExceeded, at(25))
	oldAttempt := succeededPodClique("node", at(40))
	oldAttempt.Labels[labels.AttemptKey] = "0"
	newAttempt := succeededPodClique("node", at(28))
	newAttempt.Labels[labels.AttemptKey] = "1"
	cases := []struct {
		name       string
		in         facts
		conditions string
		want       time.Time
	}{
		{"PodCliqueSet succeeded: its completionTime, even when the cache shows no PodClique record yet",
			facts{TrainJob: job(0, false), PodCliqueSet: func() *copsev1alpha1.PodCliqueSet {
				pcs := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0)
				pcs.Status.CompletionTime = ptr.To(metav1.NewTime(at(26)))
				return pcs
			}(), PodCliques: []copsev1alpha1.PodClique{succeededPodClique("launcher", at(20))}, Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(26)},
		{"PodCliqueSet (of an older copse, no completionTime) succeeded: when its last clique's last pod finished",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0),
				PodCliques: []copsev1alpha1.PodClique{succeededPodClique("launcher", at(20)), succeededPodClique("node", at(27))}, Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(27)},
		{"PodCliqueSet succeeded after a restart: the current attempt's time",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 1),
				PodCliques: []copsev1alpha1.PodClique{succeededPodClique("launcher", at(20)), oldAttempt, newAttempt}, Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(28)},
		{"PodCliqueSet succeeded by its success policy: when SuccessCriteriaMet turned True",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0, criteriaMet),
				PodCliques: []copsev1alpha1.PodClique{succeededPodClique("launcher", at(21))}, Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(22)},
		{"PodCliqueSet failed: when its Failed condition turned True",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 2, restartsExceeded), Now: at(90)},
			trainerv1alpha1.TrainJobFailed, at(25)},
		{"PodCliqueSet succeeded without any recorded time: now",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0), Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(90)},
		{"JobSet completed: JobSet's condition time",
			facts{TrainJob: job(0, false), JobSet: jobSet(cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", at(33))), Now: at(90)},
			trainerv1alpha1.TrainJobComplete, at(33)},
		{"JobSet failed: JobSet's condition time",
			facts{TrainJob: job(0, false), JobSet: jobSet(cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", at(34))), Now: at(90)},
			trainerv1alpha1.TrainJobFailed, at(34)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := meta.FindStatusCondition(decide(tc.in).Status.Conditions, tc.conditions)
			if c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(tc.want) {
				t.Errorf("%s = %+v, want True since %v", tc.conditions, c, tc.want)
			}
		})
	}

	// The TTL counts from the backend's time: finished at 27, a TTL of 10,
	// noticed at 40: deleted in this very pass.
	d := decide(facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0),
		PodCliques: []copsev1alpha1.PodClique{succeededPodClique("launcher", at(20)), succeededPodClique("node", at(27))},
		TTL:        ptr.To[int32](10), Now: at(40)})
	if !d.DeleteTrainJob {
		t.Errorf("finished at 27 with a TTL of 10, at 40 not deleted (requeue %v)", d.RequeueAfter)
	}
}

// podCliqueSet is a TrainJob's PodCliqueSet with cliques launcher (1 pod)
// and node (2 pods), in a phase, after some restarts.
func podCliqueSet(phase copsev1alpha1.PodCliqueSetPhase, restarts int32, conditions ...metav1.Condition) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "tj"}}
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "launcher", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1}},
		{Name: "node", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}},
	}
	pcs.Status.Phase = phase
	pcs.Status.RestartCount = restarts
	pcs.Status.Conditions = conditions
	return pcs
}

// podClique is the PodClique of a clique of attempt, with pods pods not
// ended, ready of them ready, and succeeded indexes.
func podClique(clique string, attempt int, pods, ready int32, succeeded string, conditions ...metav1.Condition) copsev1alpha1.PodClique {
	pclq := copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "tj-0-" + clique, Labels: map[string]string{
		labels.CliqueTemplateKey: clique, labels.AttemptKey: strconv.Itoa(attempt)}}}
	pclq.Spec.Replicas = map[string]int32{"launcher": 1, "node": 2}[clique]
	pclq.Status.Replicas = pods
	pclq.Status.ReadyReplicas = ready
	pclq.Status.SucceededIndexes = succeeded
	pclq.Status.Conditions = conditions
	return pclq
}

func TestDecideOnThePodCliqueSetBackend(t *testing.T) {
	criteriaMet := cond(copsev1alpha1.ConditionTypeSuccessCriteriaMet, metav1.ConditionTrue, copsev1alpha1.ReasonSuccessPolicy, at(29))
	restartsExceeded := metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonMaxRestartsExceeded, Message: "restart 3 of at most 2", LastTransitionTime: metav1.NewTime(at(29))}
	runtimeExceeded := cond(copsev1alpha1.ConditionTypeFailed, metav1.ConditionTrue, copsev1alpha1.ReasonMaxRuntimeExceeded, at(29))
	withFailure := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		pcs.Status.LastFailure = &copsev1alpha1.PodFailure{Summary: "tj-0-node-abc: container node exited 1", PodClique: "tj-0-node"}
		return pcs
	}
	cases := []struct {
		name    string
		in      facts
		want    outcome
		message []string // what the terminal condition's message says
	}{
		{"running: no condition, the PodCliqueSet kept as built",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), Now: at(10)},
			outcome{Conditions: map[string]string{}, Run: true}, nil},
		{"succeeded, every clique: Complete with JobSet's reason, the restarts in the message",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 2), Now: at(31)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}, []string{"every clique completed", "restarts: 2"}},
		{"succeeded by its success policy: Complete with JobSet's reason, the policy in the message",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0, criteriaMet), Now: at(31)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}, []string{"success policy met", "restarts: 0"}},
		{"success criteria met but pods still ending: not Complete yet",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0, criteriaMet), Now: at(31)},
			outcome{Conditions: map[string]string{}, Run: true}, nil},
		{"restart budget spent: Failed ReachedMaxRestarts (JobSet's reason), with the root cause and the restarts",
			facts{TrainJob: job(0, false), FailurePolicy: true, PodCliqueSet: withFailure(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 2, restartsExceeded)), Now: at(31)},
			outcome{Conditions: map[string]string{"Failed": "True/ReachedMaxRestarts"}},
			[]string{"restart 3 of at most 2", "last failure: tj-0-node-abc: container node exited 1", "restarts: 2"}},
		{"runtime limit: Failed MaxRuntimeExceeded",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 0, runtimeExceeded), Now: at(31)},
			outcome{Conditions: map[string]string{"Failed": "True/MaxRuntimeExceeded"}}, nil},
		{"failed without a Failed condition: a reason still says it was the PodCliqueSet",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 0), Now: at(31)},
			outcome{Conditions: map[string]string{"Failed": "True/PodCliqueSetFailed"}}, nil},
		{"a Complete TrainJob stays Complete when its PodCliqueSet later reports Failed",
			facts{TrainJob: job(0, false, cond("Complete", metav1.ConditionTrue, "AllJobsCompleted", at(30))),
				PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 0, runtimeExceeded), Now: at(40)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}, nil},
		{"past the deadline: Failed DeadlineExceeded and the PodCliqueSet deleted",
			facts{TrainJob: job(60, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), Now: at(61)},
			outcome{Conditions: map[string]string{"Failed": "True/DeadlineExceeded"}, DeleteRun: true}, nil},
		{"a deadline that passed after the PodCliqueSet succeeded: Complete, nothing deleted",
			facts{TrainJob: job(60, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0), Now: at(61)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}}, nil},
		{"suspended: Suspended, the PodCliqueSet kept (suspended by the build)",
			facts{TrainJob: job(60, true), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), Now: at(600)},
			outcome{Conditions: map[string]string{"Suspended": "True/Suspended"}, Run: true}, nil},
		{"TTL 0 after success: deleted",
			facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0), TTL: ptr.To[int32](0), Now: at(31)},
			outcome{Conditions: map[string]string{"Complete": "True/AllJobsCompleted"}, DeleteTrainJob: true}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.in)
			if diff := cmp.Diff(tc.want, summarize(d)); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
			for _, want := range tc.message {
				c := terminalCondition(d.Status)
				if c == nil || !strings.Contains(c.Message, want) {
					t.Errorf("terminal condition %+v does not say %q", c, want)
				}
			}
		})
	}
}

func terminalCondition(status trainerv1alpha1.TrainJobStatus) *metav1.Condition {
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := meta.FindStatusCondition(status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

func TestPodCliqueSetJobsStatus(t *testing.T) {
	succeeded := cond(copsev1alpha1.ConditionTypeSucceeded, metav1.ConditionTrue, copsev1alpha1.ReasonAllPodsSucceeded, at(1))
	counts := func(name string, ready, succeeded, failed, active, suspended int32) trainerv1alpha1.JobStatus {
		return trainerv1alpha1.JobStatus{Name: name, Ready: ptr.To(ready), Succeeded: ptr.To(succeeded), Failed: ptr.To(failed),
			Active: ptr.To(active), Suspended: ptr.To(suspended)}
	}
	failedPCS := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 1)
	failedPCS.Status.LastFailure = &copsev1alpha1.PodFailure{PodClique: "tj-0-node"}
	suspendedPCS := podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0)
	suspendedPCS.Spec.Suspend = ptr.To(true)
	recreated := func(pcs *copsev1alpha1.PodCliqueSet, reason copsev1alpha1.RecreationReason) *copsev1alpha1.PodCliqueSet {
		pcs = pcs.DeepCopy()
		pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Reason: reason, Attempt: 1}}
		return pcs
	}
	launcherSucceeded := []trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 0, 1, 0)}
	cases := []struct {
		name     string
		pcs      *copsev1alpha1.PodCliqueSet
		pclqs    []copsev1alpha1.PodClique
		pods     map[string]int // pods not ended, per clique
		previous []trainerv1alpha1.JobStatus
		expect   []trainerv1alpha1.JobStatus
	}{
		{"no PodCliques yet: one entry per clique, all zero",
			podCliqueSet(copsev1alpha1.PodCliqueSetPhasePending, 0), nil, nil,
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"running: active, ready once every pod is ready",
			podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0),
			[]copsev1alpha1.PodClique{podClique("launcher", 0, 1, 0, ""), podClique("node", 0, 2, 2, "")},
			map[string]int{"launcher": 1, "node": 2},
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 1, 0), counts("node", 1, 0, 0, 1, 0)}},
		{"ready counts succeeded pods too, as JobSet does",
			podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0),
			[]copsev1alpha1.PodClique{podClique("node", 0, 1, 1, "1")}, map[string]int{"node": 1},
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 0), counts("node", 1, 0, 0, 1, 0)}},
		{"succeeded cliques count as succeeded only",
			podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0),
			[]copsev1alpha1.PodClique{podClique("launcher", 0, 0, 0, "0", succeeded), podClique("node", 0, 0, 0, "0-1", succeeded)}, nil,
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 1, 0, 0, 0)}},
		{"failed: the clique of the root cause counts as failed",
			failedPCS,
			[]copsev1alpha1.PodClique{podClique("launcher", 0, 0, 0, ""), podClique("node", 0, 0, 0, "")}, nil,
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 0), counts("node", 0, 0, 1, 0, 0)}},
		{"suspended with every pod gone: every clique that has not finished is suspended, none active",
			suspendedPCS,
			[]copsev1alpha1.PodClique{podClique("launcher", 0, 0, 0, "0", succeeded)}, nil,
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 0, 0, 1)}},
		{"suspended while pods are going away: their clique stays active (Kueue keeps the quota until they are gone)",
			suspendedPCS,
			[]copsev1alpha1.PodClique{podClique("launcher", 0, 0, 0, ""), podClique("node", 0, 0, 0, "")},
			map[string]int{"node": 2},
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 1), counts("node", 0, 0, 0, 1, 1)}},
		{"suspended, the PodCliques already deleted by the suspension but a pod still ending: active",
			suspendedPCS, nil, map[string]int{"launcher": 1},
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 1, 1), counts("node", 0, 0, 0, 0, 1)}},
		{"suspended: a clique that succeeded before the suspension stays succeeded (Kueue refuses reclaimable pods that shrink while it holds the quota)",
			recreated(suspendedPCS, copsev1alpha1.RecreationReasonSuspension), nil, map[string]int{"node": 1}, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 0, 1, 1)}},
		{"resumed: a clique that succeeded before the suspension and runs again stays succeeded, active while it runs",
			recreated(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), copsev1alpha1.RecreationReasonSuspension),
			[]copsev1alpha1.PodClique{podClique("launcher", 1, 1, 1, "")}, map[string]int{"launcher": 1}, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 1, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"a recreation that is no restart (incomplete placement) after the suspension keeps the earlier success",
			recreated(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), copsev1alpha1.RecreationReasonIncompletePlacement),
			[]copsev1alpha1.PodClique{podClique("launcher", 2, 1, 0, "")}, map[string]int{"launcher": 1}, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 1, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"an in-place barrier timeout's recreation keeps it too",
			recreated(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0), copsev1alpha1.RecreationReasonInPlaceRestartTimeout),
			nil, nil, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 1, 0, 0, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"an uncounted restart undoes it, as a counted one does",
			recreated(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 1), copsev1alpha1.RecreationReasonUncountedRestart),
			[]copsev1alpha1.PodClique{podClique("launcher", 1, 1, 1, "")}, map[string]int{"launcher": 1}, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 1, 0, 0, 1, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"a training restart undoes the earlier success: the clique runs again",
			recreated(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 1), copsev1alpha1.RecreationReasonTrainingRestart),
			[]copsev1alpha1.PodClique{podClique("launcher", 1, 1, 1, "")}, map[string]int{"launcher": 1}, launcherSucceeded,
			[]trainerv1alpha1.JobStatus{counts("launcher", 1, 0, 0, 1, 0), counts("node", 0, 0, 0, 0, 0)}},
		{"a restart: the new attempt's PodClique counts, not the old one's",
			podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 1),
			[]copsev1alpha1.PodClique{podClique("node", 1, 2, 0, ""), podClique("node", 0, 2, 2, "")}, map[string]int{"node": 4},
			nil,
			[]trainerv1alpha1.JobStatus{counts("launcher", 0, 0, 0, 0, 0), counts("node", 0, 0, 0, 1, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.expect, podCliqueSetJobsStatus(tc.pcs, tc.pclqs, tc.pods, tc.previous)); diff != "" {
				t.Errorf("jobsStatus (-want +got):\n%s", diff)
			}
		})
	}
}
