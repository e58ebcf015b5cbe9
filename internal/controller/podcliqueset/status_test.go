package podcliqueset

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/topology"
)

func TestComputeStatus(t *testing.T) {
	started := t0.Add(-10 * time.Minute)
	failedPod := podstate.Summary{Name: "job-0-worker-x", PodClique: "job-0-worker", Replica: 0, Node: "gpu-7", Phase: corev1.PodFailed,
		FinishedAt: t0.Add(-time.Minute), Failure: &podstate.Failure{Container: "train", ExitCode: 137, Reason: "OOMKilled"}}

	t.Run("a first start sets Running and the earliest container start", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionUnknown)
		replicas := []replicaAssessment{{index: 0, started: true, startedAt: started}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1},
			startTime: startTimeCandidate(pcs, replicas, t0), now: t0})
		if got.Phase != copsev1alpha1.PodCliqueSetPhaseRunning || got.StartTime == nil || !got.StartTime.Time.Equal(started) {
			t.Errorf("phase %s startTime %v; want Running since %v", got.Phase, got.StartTime, started)
		}
		if got.Replicas != 1 || ptr.Deref(got.ObservedGeneration, -1) != pcs.Generation {
			t.Errorf("replicas %d observedGeneration %v", got.Replicas, got.ObservedGeneration)
		}
	})

	t.Run("completionTime is when the workload ended, not when the operator noticed", func(t *testing.T) {
		finished := t0.Add(-3 * time.Minute)
		pcs, obs := trainingJob(metav1.ConditionFalse)
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		pcs.Status.StartTime = &metav1.Time{Time: started}
		replicas := []replicaAssessment{{index: 0, succeeded: true, succeededAt: finished}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1}, startTime: &started, now: t0})
		if got.Phase != copsev1alpha1.PodCliqueSetPhaseSucceeded || got.CompletionTime == nil || !got.CompletionTime.Time.Equal(finished) {
			t.Errorf("phase %s completionTime %v, want Succeeded at %v", got.Phase, got.CompletionTime, finished)
		}
		failedAt := metav1.NewTime(t0.Add(-time.Minute))
		failing, _ := trainingJob(metav1.ConditionTrue)
		failing.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		failing.Status.Conditions = append(failing.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed,
			Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, LastTransitionTime: failedAt})
		got = computeStatus(failing, statusInputs{observed: &observed{}, decision: passDecision{causeReplica: -1}, now: t0})
		if got.Phase != copsev1alpha1.PodCliqueSetPhaseFailed || got.CompletionTime == nil || !got.CompletionTime.Time.Equal(failedAt.Time) {
			t.Errorf("phase %s completionTime %v, want Failed at %v", got.Phase, got.CompletionTime, failedAt)
		}
	})

	t.Run("the replicas that succeeded are recorded, so that they get no pods", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionUnknown)
		pcs.Spec.Replicas = 3
		replicas := []replicaAssessment{{index: 0, succeeded: true}, {index: 1, started: true}, {index: 2, succeeded: true}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1}, now: t0})
		if got.SucceededReplicaIndexes != "0,2" {
			t.Errorf("succeededReplicaIndexes %q, want \"0,2\"", got.SucceededReplicaIndexes)
		}
	})

	t.Run("a restart is recorded with its count and root cause, nothing else changes", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionTrue)
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		pcs.Status.StartTime = &metav1.Time{Time: started}
		replicas := []replicaAssessment{{index: 0, breached: true, breachedSince: t0.Add(-time.Minute), firstFailure: &failedPod}}
		rec := copsev1alpha1.ReplicaRecreation{ReplicaIndex: 0, Attempt: 1, Reason: copsev1alpha1.RecreationReasonTrainingRestart, StartedAt: metav1.NewTime(t0)}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, newRecreations: []copsev1alpha1.ReplicaRecreation{rec},
			decision: passDecision{restartCount: 1, causeReplica: 0}, startTime: &started, now: t0})
		if got.RestartCount != 1 || len(got.ReplicaRecreations) != 1 || got.Phase != copsev1alpha1.PodCliqueSetPhaseRunning {
			t.Errorf("restartCount %d recreations %v phase %s", got.RestartCount, got.ReplicaRecreations, got.Phase)
		}
		if f := got.LastFailure; f == nil || f.Pod != "job-0-worker-x" || f.Node != "gpu-7" || ptr.Deref(f.ExitCode, 0) != 137 ||
			f.Reason != "OOMKilled" || f.Summary != "job-0-worker-x: container train exited 137, OOMKilled on node gpu-7" {
			t.Errorf("lastFailure %+v", f)
		}
		if c := meta.FindStatusCondition(got.Conditions, constants.ConditionTypeMinAvailableBreached); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("MinAvailableBreached %+v", c)
		}
		if meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeFailed) != nil {
			t.Error("a restart is no failure")
		}
	})

	t.Run("a failure waits for the running pods before the phase is Failed", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionTrue, podstate.Summary{Name: "still-running", Phase: corev1.PodRunning})
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		replicas := []replicaAssessment{{index: 0, breached: true, firstFailure: &failedPod}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas,
			decision:  passDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, failMessage: "replica 0 failed after 0 of 0 allowed restarts", causeReplica: 0},
			startTime: &started, now: t0})
		failed := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeFailed)
		if failed == nil || failed.Reason != copsev1alpha1.ReasonMaxRestartsExceeded ||
			!strings.HasSuffix(failed.Message, "; first failure: job-0-worker-x: container train exited 137, OOMKilled on node gpu-7") {
			t.Errorf("Failed condition %+v", failed)
		}
		if got.Phase != copsev1alpha1.PodCliqueSetPhaseRunning {
			t.Errorf("phase %s while a pod still runs, want Running", got.Phase)
		}
		pcs.Status = got
		_, empty := trainingJob(metav1.ConditionTrue)
		if next := computeStatus(pcs, statusInputs{observed: empty, replicas: replicas, decision: passDecision{causeReplica: -1}, startTime: &started, now: t0}); next.Phase != copsev1alpha1.PodCliqueSetPhaseFailed {
			t.Errorf("phase %s once no pod runs, want Failed", next.Phase)
		}
	})

	t.Run("a pod overdue in terminating is reported, and cleared once gone", func(t *testing.T) {
		stuck := podstate.Summary{Name: "stuck", Node: "gpu-3", Phase: corev1.PodRunning, Terminating: true, DeletionDeadline: t0.Add(-time.Minute)}
		pcs, obs := trainingJob(metav1.ConditionTrue, stuck)
		meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonMaxRestartsExceeded})
		got := computeStatus(pcs, statusInputs{observed: obs, decision: passDecision{causeReplica: -1}, now: t0})
		c := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "stuck (on gpu-3") {
			t.Fatalf("TerminationOverdue %+v", c)
		}
		if got.Phase.IsTerminal() {
			t.Errorf("phase %s while a pod still terminates", got.Phase)
		}
		pcs.Status = got
		_, empty := trainingJob(metav1.ConditionTrue)
		next := computeStatus(pcs, statusInputs{observed: empty, decision: passDecision{causeReplica: -1}, now: t0})
		if c := meta.FindStatusCondition(next.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("TerminationOverdue after the pod is gone: %+v", c)
		}
	})

	t.Run("a met success policy is written first, and Succeeded waits for the lingering pods", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionFalse, podstate.Summary{Name: "worker-still-running", Phase: corev1.PodRunning})
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{SuccessPolicy: &copsev1alpha1.SuccessPolicy{
			Operator: copsev1alpha1.SuccessPolicyOperatorAny, TargetCliques: []string{"launcher"}}}
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		replicas := []replicaAssessment{{index: 0, succeeded: true, succeededAt: t0, succeededBy: []string{"job-0-launcher"}}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1}, startTime: &started, now: t0})
		met := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
		if met == nil || met.Status != metav1.ConditionTrue || met.Reason != copsev1alpha1.ReasonSuccessPolicy ||
			!strings.Contains(met.Message, "job-0-launcher") || !strings.Contains(met.Message, "Any of cliques launcher") {
			t.Fatalf("SuccessCriteriaMet %+v", met)
		}
		if got.Phase != copsev1alpha1.PodCliqueSetPhaseRunning {
			t.Errorf("phase %s while a pod still runs, want Running", got.Phase)
		}
		pcs.Status = got
		_, empty := trainingJob(metav1.ConditionFalse)
		// The lingering pods are gone; even a replica that no longer looks
		// succeeded cannot take the success back.
		next := computeStatus(pcs, statusInputs{observed: empty, replicas: []replicaAssessment{{index: 0, breached: true}},
			decision: passDecision{causeReplica: -1}, startTime: &started, now: t0})
		if next.Phase != copsev1alpha1.PodCliqueSetPhaseSucceeded || meta.FindStatusCondition(next.Conditions, copsev1alpha1.ConditionTypeFailed) != nil {
			t.Errorf("phase %s conditions %+v, want Succeeded and no Failed", next.Phase, next.Conditions)
		}
	})

	t.Run("no SuccessCriteriaMet without a policy, nor after a failure", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionFalse)
		replicas := []replicaAssessment{{index: 0, succeeded: true, succeededAt: t0}}
		got := computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1}, now: t0})
		if meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) != nil || got.Phase != copsev1alpha1.PodCliqueSetPhaseSucceeded {
			t.Errorf("without a policy: phase %s conditions %+v", got.Phase, got.Conditions)
		}
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{SuccessPolicy: &copsev1alpha1.SuccessPolicy{}}
		meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded})
		got = computeStatus(pcs, statusInputs{observed: obs, replicas: replicas, decision: passDecision{causeReplica: -1}, now: t0})
		if meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet) != nil || got.Phase != copsev1alpha1.PodCliqueSetPhaseFailed {
			t.Errorf("after a failure: phase %s conditions %+v", got.Phase, got.Conditions)
		}
	})

	t.Run("a suspension clears startTime once no pod is left, keeps restartCount, and says how many pods are going", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionFalse, podstate.Summary{Name: "going", Phase: corev1.PodRunning, Terminating: true, DeletionDeadline: t0.Add(time.Minute)})
		pcs.Spec.Suspend = ptr.To(true)
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		pcs.Status.StartTime = &metav1.Time{Time: started}
		pcs.Status.RestartCount = 2
		d := passDecision{restartCount: 2, causeReplica: -1}
		got := computeStatus(pcs, statusInputs{observed: obs, decision: d, startTime: &started, now: t0})
		cond := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeSuspended)
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "1 pod(s) are still going away") {
			t.Errorf("Suspended %+v", cond)
		}
		if got.StartTime == nil || got.Phase != copsev1alpha1.PodCliqueSetPhaseRunning || got.RestartCount != 2 {
			t.Errorf("while a pod is going: startTime %v phase %s restartCount %d", got.StartTime, got.Phase, got.RestartCount)
		}
		pcs.Status = got
		_, empty := trainingJob(metav1.ConditionFalse)
		next := computeStatus(pcs, statusInputs{observed: empty, decision: d, startTime: &started, now: t0})
		if next.StartTime != nil || next.Phase != copsev1alpha1.PodCliqueSetPhasePending || next.RestartCount != 2 || next.LastFailure != nil {
			t.Errorf("once no pod is left: startTime %v phase %s restartCount %d lastFailure %v", next.StartTime, next.Phase, next.RestartCount, next.LastFailure)
		}
	})

	t.Run("a pod terminating within its grace period is not overdue", func(t *testing.T) {
		pcs, obs := trainingJob(metav1.ConditionTrue, podstate.Summary{Name: "going", Phase: corev1.PodRunning, Terminating: true, DeletionDeadline: t0.Add(-time.Second)})
		meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonMaxRestartsExceeded})
		got := computeStatus(pcs, statusInputs{observed: obs, decision: passDecision{causeReplica: -1}, now: t0})
		if meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue) != nil {
			t.Error("not overdue yet: no condition")
		}
		if at := overdueCheckAt(pcs, lifecycle.RecordsOf(pcs), obs); !at.Equal(t0.Add(-time.Second + overdueGrace)) {
			t.Errorf("overdue check at %v", at)
		}
	})
}

func TestTransitionEvents(t *testing.T) {
	failedPod := podstate.Summary{Name: "job-0-worker-x", Phase: corev1.PodFailed, Failure: &podstate.Failure{Container: "train", ExitCode: 1, Reason: "Error"}}
	breached := []replicaAssessment{{index: 0, breached: true, breachedSince: t0, breachedBy: []string{"job-0-worker (PodsFailed)"}, firstFailure: &failedPod}}
	pcs, _ := trainingJob(metav1.ConditionTrue)
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](3)}
	running := copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning}
	reasons := func(events []transitionEvent) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Reason)
		}
		return out
	}

	t.Run("a restart", func(t *testing.T) {
		after := running
		after.RestartCount, after.RestartsCountTowardsMax = 1, 1
		events := transitionEvents(pcs, &running, &after, breached, []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1}})
		if got := strings.Join(reasons(events), ","); got != "PodCliqueFailed,ReplicaRestarting" {
			t.Fatalf("events %s", got)
		}
		if msg := events[1].Message; !strings.Contains(msg, "attempt 1; restart 1 of 3 allowed; first failure: job-0-worker-x: container train exited 1, Error") {
			t.Errorf("ReplicaRestarting message %q", msg)
		}
	})
	t.Run("a restart a rule makes without spending maxRestarts names the rule and the uncounted budget", func(t *testing.T) {
		after := running
		after.RestartCount, after.RestartsCountTowardsMax, after.UncountedRestarts = 3, 1, 2
		ruled := slices.Clone(breached)
		ruled[0].verdict = lifecycle.RuleVerdict{Rule: "preempted", Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount}
		events := transitionEvents(pcs, &running, &after, ruled, []copsev1alpha1.ReplicaRecreation{
			{ReplicaIndex: 0, Attempt: 3, Reason: copsev1alpha1.RecreationReasonUncountedRestart}})
		if got := strings.Join(reasons(events), ","); got != "PodCliqueFailed,ReplicaRestarting" {
			t.Fatalf("events %s", got)
		}
		want := `attempt 3; uncounted restart 2 of 10 allowed, maxRestarts not spent (failurePolicy rule "preempted": RestartReplicaWithoutCount); first failure`
		if msg := events[1].Message; !strings.Contains(msg, want) {
			t.Errorf("ReplicaRestarting message %q, want it to contain %q", msg, want)
		}
	})
	t.Run("a recreation for an incomplete placement is no restart", func(t *testing.T) {
		after := running
		after.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypePodGangsScheduled, Status: metav1.ConditionFalse,
			Reason: copsev1alpha1.ReasonGangPlacedIncomplete, Message: "job-0, placed without enough pods of job-0-leader"}}
		events := transitionEvents(pcs, &running, &after, nil, []copsev1alpha1.ReplicaRecreation{
			{ReplicaIndex: 0, Attempt: 1, Reason: copsev1alpha1.RecreationReasonIncompletePlacement}})
		if got := strings.Join(reasons(events), ","); got != "GangPlacedIncomplete" {
			t.Fatalf("events %s", got)
		}
		if msg := events[0].Message; !strings.Contains(msg, "no restart is counted") || !strings.Contains(msg, "job-0-leader") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("a restart in place that timed out is recreated, no restart", func(t *testing.T) {
		after := running
		events := transitionEvents(pcs, &running, &after, nil, []copsev1alpha1.ReplicaRecreation{
			{ReplicaIndex: 0, Attempt: 2, Reason: copsev1alpha1.RecreationReasonInPlaceRestartTimeout}})
		if got := strings.Join(reasons(events), ","); got != "InPlaceRestartTimedOut" {
			t.Fatalf("events %s", got)
		}
		if msg := events[0].Message; !strings.Contains(msg, "no restart is counted") || !strings.Contains(msg, "attempt 2") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("a failure is reported once", func(t *testing.T) {
		after := running
		after.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded, Message: "maxRuntime 1h elapsed"}}
		if got := strings.Join(reasons(transitionEvents(pcs, &running, &after, nil, nil)), ","); got != "MaxRuntimeExceeded" {
			t.Errorf("events %s", got)
		}
		if got := transitionEvents(pcs, &after, &after, nil, nil); len(got) != 0 {
			t.Errorf("repeated: %v", reasons(got))
		}
	})
	t.Run("success", func(t *testing.T) {
		after := running
		after.Phase = copsev1alpha1.PodCliqueSetPhaseSucceeded
		if got := strings.Join(reasons(transitionEvents(pcs, &running, &after, nil, nil)), ","); got != "WorkloadSucceeded" {
			t.Errorf("events %s", got)
		}
	})
	t.Run("a success policy met, then Succeeded", func(t *testing.T) {
		met := running
		met.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue,
			Reason: copsev1alpha1.ReasonSuccessPolicy, Message: "every replica met the success policy"}}
		if got := strings.Join(reasons(transitionEvents(pcs, &running, &met, nil, nil)), ","); got != "SuccessCriteriaMet" {
			t.Errorf("events %s", got)
		}
		done := met
		done.Phase = copsev1alpha1.PodCliqueSetPhaseSucceeded
		events := transitionEvents(pcs, &met, &done, nil, nil)
		if len(events) != 1 || events[0].Reason != EventWorkloadSucceeded || !strings.Contains(events[0].Message, "met the success policy") {
			t.Errorf("events %+v", events)
		}
	})
	t.Run("suspended, then resumed: one event each, none per suspended replica", func(t *testing.T) {
		suspended := running
		suspended.RestartCount = 2
		suspended.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuspended, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonSuspended}}
		events := transitionEvents(pcs, &running, &suspended, breached,
			[]copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1, Reason: copsev1alpha1.RecreationReasonSuspension}})
		if len(events) != 1 || events[0].Reason != EventSuspended || !strings.Contains(events[0].Message, "restartCount 2 is kept") {
			t.Errorf("events %+v", events)
		}
		if got := transitionEvents(pcs, &suspended, &suspended, nil, nil); len(got) != 0 {
			t.Errorf("repeated: %v", reasons(got))
		}
		resumed := running
		resumed.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuspended, Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonResumed}}
		if got := strings.Join(reasons(transitionEvents(pcs, &suspended, &resumed, nil, nil)), ","); got != "Resumed" {
			t.Errorf("events %s", got)
		}
	})
	t.Run("a gang termination for Inference", func(t *testing.T) {
		inference, _ := trainingJob(metav1.ConditionTrue)
		inference.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
		events := transitionEvents(inference, &running, &running, breached, []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0}})
		if len(events) != 1 || events[0].Reason != EventGangTermination || !strings.Contains(events[0].Message, "job-0-worker (PodsFailed)") {
			t.Errorf("events %+v", events)
		}
	})
}

// TestComputeStatusWritesTheAdmittedCondition: the Admitted condition of a
// queued PodCliqueSet is written with the rest of the status (this
// controller is the one writer of PodCliqueSet status), removed when the
// protocol says so, and left alone for a PodCliqueSet outside Kueue.
func TestComputeStatusWritesTheAdmittedCondition(t *testing.T) {
	admitted := metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonAdmitted, Message: "Workload podcliqueset-job is admitted by ClusterQueue team-a", LastTransitionTime: metav1.NewTime(t0)}
	pending := metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse,
		Reason: copsev1alpha1.ReasonPending, Message: "waits", LastTransitionTime: metav1.NewTime(t0)}
	tests := []struct {
		name      string
		before    *metav1.Condition
		admission admission
		want      *metav1.Condition
	}{
		{name: "queued: the condition is written", admission: admission{tracked: true, condition: &pending}, want: &pending},
		{name: "admitted: it changes", before: &pending, admission: admission{tracked: true, condition: &admitted}, want: &admitted},
		{name: "left its queue: it is removed", before: &pending, admission: admission{tracked: true}},
		{name: "not queued (or Kueue off): it stays as it is", before: &pending, want: &pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs, obs := trainingJob(metav1.ConditionUnknown)
			if tt.before != nil {
				pcs.Status.Conditions = []metav1.Condition{*tt.before}
			}
			got := computeStatus(pcs, statusInputs{observed: obs, decision: passDecision{causeReplica: -1}, now: t0, admission: tt.admission})
			cond := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypeAdmitted)
			switch {
			case tt.want == nil && cond != nil:
				t.Errorf("Admitted %+v, want none", *cond)
			case tt.want != nil && cond == nil:
				t.Errorf("no Admitted condition, want %s", tt.want.Reason)
			case tt.want != nil && (cond.Status != tt.want.Status || cond.Reason != tt.want.Reason || cond.Message != tt.want.Message):
				t.Errorf("Admitted %s/%s %q, want %s/%s %q", cond.Status, cond.Reason, cond.Message, tt.want.Status, tt.want.Reason, tt.want.Message)
			}
		})
	}
}

func TestTopologyCondition(t *testing.T) {
	plain := &copsev1alpha1.PodCliqueSet{}
	plain.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "worker"}}
	constrained := plain.DeepCopy()
	constrained.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet",
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	notFound := topology.Problem{Reason: copsev1alpha1.ReasonClusterTopologyNotFound,
		Err: field.NotFound(field.NewPath("spec", "template", "topologyConstraint", "topologyName"), "fleet")}
	cases := []struct {
		name     string
		pcs      *copsev1alpha1.PodCliqueSet
		problems []topology.Problem
		want     *metav1.Condition
	}{
		{name: "no constraint: absent", pcs: plain},
		{name: "all applied", pcs: constrained, want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionFalse,
			Reason: "AllClusterTopologyLevelsAvailable", Message: "every topologyConstraint is applied with ClusterTopologyBinding fleet"}},
		{name: "the binding is not found: Unknown, the message names the field", pcs: constrained, problems: []topology.Problem{notFound},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "ClusterTopologyNotFound",
				Message: `spec.template.topologyConstraint.topologyName: Not found: "fleet"; these constraints are left off the gangs and pods created from now on`}},
		{name: "a level the binding lacks: True", pcs: constrained, problems: []topology.Problem{{Reason: copsev1alpha1.ReasonClusterTopologyLevelsUnavailable,
			Err: field.NotSupported(field.NewPath("spec", "template", "topologyConstraint", "pack", "required"), "rack", []string{"zone", "host"})}},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionTrue, Reason: "ClusterTopologyLevelsUnavailable",
				Message: `spec.template.topologyConstraint.pack.required: Unsupported value: "rack": supported values: "zone", "host"; these constraints are left off the gangs and pods created from now on`}},
		{name: "no topologyName: Unknown", pcs: constrained, problems: []topology.Problem{{Reason: copsev1alpha1.ReasonTopologyNameMissing,
			Err: field.Required(field.NewPath("spec", "template", "topologyConstraint", "topologyName"), "pack needs it")}},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "TopologyNameMissing",
				Message: `spec.template.topologyConstraint.topologyName: Required value: pack needs it; these constraints are left off the gangs and pods created from now on`}},
		{name: "disabled", pcs: constrained, problems: topology.Disabled(constrained),
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "TopologyAwareSchedulingDisabled",
				Message: "spec.template.topologyConstraint: Forbidden: " + topology.DisabledMessage + "; these constraints are left off the gangs and pods created from now on"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := topologyCondition(tc.pcs, tc.problems, t0)
			if got != nil {
				got.LastTransitionTime = metav1.Time{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
