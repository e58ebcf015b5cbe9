package trainjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// TestSameOutcomeSameReasonOnBothBackends: a TrainJob reads the same on both
// backends. For each outcome, the JobSet backend's facts are the JobSet as
// JobSet v0.12.0 reports that outcome (its condition, reason and message,
// which copse mirrors as Kubeflow Trainer v2.3.0 does), and the PodCliqueSet
// backend's are the PodCliqueSet as copse's controllers report it; both
// TrainJobs must carry the same conditions with the same reasons. Where copse
// says more on the PodCliqueSet backend, it says it in the message.
//
// Two outcomes are one backend's only and are tested with it
// (TestDecideOnThePodCliqueSetBackend): a PodCliqueSet deleted from outside
// fails the TrainJob with BackendDeleted, where a deleted JobSet is created
// again (as Kubeflow Trainer does); and MaxRuntimeExceeded, which only a
// PodCliqueSet edited by hand can report (the build sets no maxRuntime).
func TestSameOutcomeSameReasonOnBothBackends(t *testing.T) {
	jobSetCondition := func(conditionType jobsetv1alpha2.JobSetConditionType, reason, message string) metav1.Condition {
		c := cond(string(conditionType), metav1.ConditionTrue, reason, at(30))
		c.Message = message
		return c
	}
	succeeded := cond(copsev1alpha1.ConditionTypeSucceeded, metav1.ConditionTrue, copsev1alpha1.ReasonAllPodsSucceeded, at(29))
	launcherPolicy := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{SuccessPolicy: &copsev1alpha1.SuccessPolicy{
			Operator: copsev1alpha1.SuccessPolicyOperatorAll, TargetCliques: []string{"launcher"}}}
		return pcs
	}
	failedRun := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		pcs.Status.LastFailure = &copsev1alpha1.PodFailure{Summary: "tj-0-node-0: container node exited 1", PodClique: "tj-0-node"}
		return pcs
	}
	restartsExceeded := func(message string) metav1.Condition {
		c := cond(copsev1alpha1.ConditionTypeFailed, metav1.ConditionTrue, copsev1alpha1.ReasonMaxRestartsExceeded, at(29))
		c.Message = message
		return c
	}
	resumed := cond(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, at(5))
	running := func() *copsev1alpha1.PodCliqueSet { return podCliqueSet(copsev1alpha1.PodCliqueSetPhaseRunning, 0) }

	cases := []struct {
		outcome string
		// jobSet and podCliqueSet are the facts of the same outcome on
		// each backend.
		jobSet, podCliqueSet facts
		// want is every condition of the TrainJob, type -> status/reason,
		// the same on both backends.
		want map[string]string
		// message: what the PodCliqueSet backend's terminal condition says
		// besides.
		message []string
	}{
		{outcome: "running",
			jobSet:       facts{TrainJob: job(0, false), JobSet: jobSet(), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), PodCliqueSet: running(), Now: at(31)},
			want:         map[string]string{}},
		{outcome: "every job completed",
			jobSet: facts{TrainJob: job(0, false), JobSet: jobSet(jobSetCondition(jobsetv1alpha2.JobSetCompleted,
				jobsetconstants.AllJobsCompletedReason, jobsetconstants.AllJobsCompletedMessage)), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), PodCliqueSet: podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 1),
				PodCliques: []copsev1alpha1.PodClique{podClique("launcher", 1, 0, 0, "0", succeeded), podClique("node", 1, 0, 0, "0-1", succeeded)},
				Now:        at(31)},
			want:    map[string]string{"Complete": "True/AllJobsCompleted"},
			message: []string{"every clique completed", "restarts: 1"}},
		{outcome: "success policy met: the MPI launcher succeeded, the nodes were ended",
			jobSet: facts{TrainJob: job(0, false), JobSet: jobSet(jobSetCondition(jobsetv1alpha2.JobSetCompleted,
				jobsetconstants.AllJobsCompletedReason, jobsetconstants.AllJobsCompletedMessage)), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), Now: at(31),
				PodCliqueSet: launcherPolicy(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseSucceeded, 0,
					cond(copsev1alpha1.ConditionTypeSuccessCriteriaMet, metav1.ConditionTrue, copsev1alpha1.ReasonSuccessPolicy, at(29)))),
				PodCliques: []copsev1alpha1.PodClique{podClique("launcher", 0, 0, 0, "0", succeeded), podClique("node", 0, 0, 0, "")}},
			want:    map[string]string{"Complete": "True/AllJobsCompleted"},
			message: []string{"launcher succeeded; success policy met", "restarts: 0"}},
		{outcome: "a pod failed and the runtime has no failurePolicy: the first failure ends it",
			jobSet: facts{TrainJob: job(0, false), JobSet: jobSet(jobSetCondition(jobsetv1alpha2.JobSetFailed,
				jobsetconstants.FailedJobsReason, jobsetconstants.FailedJobsMessage+" (first failed job: tj-node-0)")), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), Now: at(31),
				PodCliqueSet: failedRun(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 0,
					restartsExceeded("replica 0 failed after 0 of 0 allowed restarts")))},
			want:    map[string]string{"Failed": "True/FailedJobs"},
			message: []string{"no failurePolicy", "last failure: tj-0-node-0: container node exited 1", "restarts: 0"}},
		{outcome: "the failurePolicy's restarts are spent",
			jobSet: facts{TrainJob: job(0, false), FailurePolicy: true, JobSet: jobSet(jobSetCondition(jobsetv1alpha2.JobSetFailed,
				jobsetconstants.ReachedMaxRestartsReason, jobsetconstants.ReachedMaxRestartsMessage+" (first failed job: tj-node-0)")), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), FailurePolicy: true, Now: at(31),
				PodCliqueSet: failedRun(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 2,
					restartsExceeded("replica 0 failed after 2 of 2 allowed restarts")))},
			want:    map[string]string{"Failed": "True/ReachedMaxRestarts"},
			message: []string{"replica 0 failed after 2 of 2 allowed restarts", "last failure: tj-0-node-0", "restarts: 2"}},
		{outcome: "a failure rule with action FailJobSet matched (a FailWorkload rule on the PodCliqueSet)",
			jobSet: facts{TrainJob: job(0, false), FailurePolicy: true, JobSet: jobSet(jobSetCondition(jobsetv1alpha2.JobSetFailed,
				jobsetconstants.FailJobSetActionReason, jobsetconstants.FailJobSetActionMessage)), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), FailurePolicy: true, Now: at(31),
				PodCliqueSet: failedRun(podCliqueSet(copsev1alpha1.PodCliqueSetPhaseFailed, 1,
					cond(copsev1alpha1.ConditionTypeFailed, metav1.ConditionTrue, copsev1alpha1.ReasonFailedByRule, at(29))))},
			want:    map[string]string{"Failed": "True/FailJobSetFailurePolicyAction"},
			message: []string{"last failure: tj-0-node-0", "restarts: 1"}},
		{outcome: "suspended",
			jobSet:       facts{TrainJob: job(0, true), JobSet: jobSet(), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, true), PodCliqueSet: running(), Now: at(31)},
			want:         map[string]string{"Suspended": "True/Suspended"}},
		{outcome: "resumed",
			jobSet:       facts{TrainJob: job(0, false, resumed), JobSet: jobSet(), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false, resumed), PodCliqueSet: running(), Now: at(31)},
			want:         map[string]string{"Suspended": "False/Resumed"}},
		{outcome: "activeDeadlineSeconds passed",
			jobSet:       facts{TrainJob: job(20, false), JobSet: jobSet(), Now: at(31)},
			podCliqueSet: facts{TrainJob: job(20, false), PodCliqueSet: running(), Now: at(31)},
			want:         map[string]string{"Failed": "True/DeadlineExceeded"}},
		{outcome: "the runtime asks for what the backend cannot run",
			jobSet:       facts{TrainJob: job(0, false), Unsupported: "flux is not supported", Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), Unsupported: "flux is not supported", Now: at(31)},
			want:         map[string]string{"Failed": "True/TrainingRuntimeNotSupported"}},
		{outcome: "an object of the TrainJob's name that it does not control",
			jobSet:       facts{TrainJob: job(0, false), NotControlled: "JobSet tj exists but is not controlled by TrainJob tj", Now: at(31)},
			podCliqueSet: facts{TrainJob: job(0, false), NotControlled: "PodCliqueSet tj exists but is not controlled by TrainJob tj", Now: at(31)},
			want:         map[string]string{"BackendRefused": "True/NotControlled"}},
	}
	for _, tc := range cases {
		t.Run(tc.outcome, func(t *testing.T) {
			tc.podCliqueSet.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			onJobSet, onPodCliqueSet := decide(tc.jobSet), decide(tc.podCliqueSet)
			if diff := cmp.Diff(tc.want, summarize(onJobSet).Conditions); diff != "" {
				t.Errorf("JobSet backend: conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, summarize(onPodCliqueSet).Conditions); diff != "" {
				t.Errorf("PodCliqueSet backend: conditions (-want +got):\n%s", diff)
			}
			for _, want := range tc.message {
				if c := terminalCondition(onPodCliqueSet.Status); c == nil || !strings.Contains(c.Message, want) {
					t.Errorf("PodCliqueSet backend: terminal condition %+v does not say %q", c, want)
				}
			}
		})
	}
}
