package trainjob

import (
	"strconv"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

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
