package podcliqueset

import (
	"slices"
	"testing"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// decideTrainingCase is one row of TestDecideTraining; its inputs also seed
// FuzzDecideTraining.
type decideTrainingCase struct {
	name string
	in   trainingInputs
	want trainingDecision
}

func decideTrainingCases() []decideTrainingCase {
	hour := time.Hour
	start := t0
	breachedAt := func(idx int, since time.Time) replicaAssessment {
		return replicaAssessment{index: idx, breached: true, breachedSince: since}
	}
	ruled := func(a replicaAssessment, rule string, action copsev1alpha1.FailureRuleAction) replicaAssessment {
		a.verdict = lifecycle.RuleVerdict{Rule: rule, Action: action}
		return a
	}
	succeededAt := func(idx int, at time.Time) replicaAssessment {
		return replicaAssessment{index: idx, succeeded: true, succeededAt: at}
	}
	return []decideTrainingCase{
		{
			name: "healthy, no limit: nothing to do",
			in:   trainingInputs{replicas: []replicaAssessment{{index: 0, available: true}}, now: t0},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "failure with maxRestarts 0 fails at once",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, maxRestarts: 0, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 0},
		},
		{
			name: "failure within budget restarts the replica and counts once",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, restartCount: 1, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0}, restartCount: 2, causeReplica: 0},
		},
		{
			name: "only the failed replica restarts",
			in:   trainingInputs{replicas: []replicaAssessment{{index: 0, available: true}, breachedAt(1, t0)}, maxRestarts: 3, now: t0},
			want: trainingDecision{restart: []int{1}, restartCount: 1, causeReplica: 1},
		},
		{
			name: "two failures, budget for one: the second fails the workload, so the first's restart is neither made nor counted",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0), breachedAt(1, t0)}, maxRestarts: 1, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 1},
		},
		{
			name: "two failures, budget for both",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(1, t0), breachedAt(0, t0)}, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0, 1}, restartCount: 2, causeReplica: 1},
		},
		{
			name: "a replica already restarting is not counted again",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, inProgress: map[int]bool{0: true}, restartCount: 1, maxRestarts: 1, now: t0},
			want: trainingDecision{restartCount: 1, causeReplica: -1},
		},
		{
			name: "a terminationDelay set by the user is honoured",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, maxRestarts: 1, terminationDelay: 30 * time.Second, now: t0.Add(10 * time.Second)},
			want: trainingDecision{requeueAfter: 20 * time.Second, causeReplica: -1},
		},
		{
			name: "before maxRuntime: requeue for the remainder",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(45 * time.Minute)},
			want: trainingDecision{requeueAfter: 15 * time.Minute, causeReplica: -1},
		},
		{
			name: "maxRuntime elapsed fails",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "a breach after the deadline: the deadline came first",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(hour+time.Minute))}, maxRestarts: 5, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "a breach before the deadline, seen after it: the deadline fails the workload, the restart is neither made nor counted",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(30*time.Minute))}, maxRestarts: 5, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: 0},
		},
		{
			name: "a breach before the deadline with the budget spent, seen after it: MaxRestartsExceeded",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(30*time.Minute))}, restartCount: 2, maxRestarts: 2, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, restartCount: 2, causeReplica: 0},
		},
		{
			name: "success before the deadline, seen after it, is success",
			in:   trainingInputs{replicas: []replicaAssessment{succeededAt(0, t0.Add(59*time.Minute)), succeededAt(1, t0.Add(time.Hour))}, maxRuntime: &hour, startTime: &start, now: t0.Add(3 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "success after the deadline is not",
			in:   trainingInputs{replicas: []replicaAssessment{succeededAt(0, t0.Add(59*time.Minute)), succeededAt(1, t0.Add(61*time.Minute))}, maxRuntime: &hour, startTime: &start, now: t0.Add(3 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "breaches are judged in the order they happened, not by replica",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(20*time.Minute)), breachedAt(1, t0.Add(10*time.Minute))}, maxRestarts: 1, now: t0.Add(30 * time.Minute)},
			want: trainingDecision{restart: nil, failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 0},
		},
		{
			name: "already failing: no new decision",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, failing: true, restartCount: 2, maxRestarts: 5, now: t0},
			want: trainingDecision{restartCount: 2, causeReplica: -1},
		},
		{
			name: "SuccessCriteriaMet: a lingering pod's failure restarts nothing",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, successCriteriaMet: true, restartCount: 1, maxRestarts: 5, now: t0},
			want: trainingDecision{restartCount: 1, causeReplica: -1},
		},
		{
			name: "SuccessCriteriaMet: maxRuntime no longer applies",
			in:   trainingInputs{successCriteriaMet: true, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "a replica that met the success policy is not restarted for a lingering pod's failure",
			in: trainingInputs{replicas: []replicaAssessment{{index: 0, succeeded: true, succeededAt: t0, breached: true, breachedSince: t0}, breachedAt(1, t0)},
				maxRestarts: 0, now: t0.Add(time.Minute)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 1},
		},
		{
			name: "terminal: no new decision",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, terminal: true, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "a FailWorkload rule fails at once, with budget left, and names the rule",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "bug", copsev1alpha1.FailureActionFailWorkload)},
				maxRestarts: 5, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonFailedByRule, causeReplica: 0},
		},
		{
			name: "a RestartReplicaWithoutCount rule restarts without spending maxRestarts (0 here)",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount)},
				restartCount: 2, uncountedRestarts: 2, maxUncountedRestarts: 3, now: t0},
			want: trainingDecision{restartUncounted: []int{0}, restartCount: 3, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "uncounted restarts run out: MaxUncountedRestartsExceeded, counted budget untouched",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount)},
				restartCount: 3, uncountedRestarts: 3, maxRestarts: 5, maxUncountedRestarts: 3, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxUncountedRestartsExceeded, restartCount: 3, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "a counted restart compares only the counted part of restartCount with maxRestarts",
			in: trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)},
				restartCount: 4, uncountedRestarts: 3, maxRestarts: 2, maxUncountedRestarts: 10, now: t0},
			want: trainingDecision{restart: []int{0}, restartCount: 5, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "one uncounted and one counted restart in one pass, each by its own verdict",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount),
				ruled(breachedAt(1, t0.Add(time.Second)), "crash", copsev1alpha1.FailureActionRestartReplica)},
				maxRestarts: 1, maxUncountedRestarts: 1, now: t0.Add(time.Minute)},
			want: trainingDecision{restart: []int{1}, restartUncounted: []int{0}, restartCount: 2, uncountedRestarts: 1, causeReplica: 1},
		},
	}
}

func TestDecideTraining(t *testing.T) {
	for _, c := range decideTrainingCases() {
		t.Run(c.name, func(t *testing.T) {
			got := decideTraining(c.in)
			if got.failReason != c.want.failReason || got.restartCount != c.want.restartCount || got.requeueAfter != c.want.requeueAfter {
				t.Fatalf("got fail=%q count=%d requeue=%v, want fail=%q count=%d requeue=%v (message %q)",
					got.failReason, got.restartCount, got.requeueAfter, c.want.failReason, c.want.restartCount, c.want.requeueAfter, got.failMessage)
			}
			if len(got.restart) != len(c.want.restart) || !slices.Equal(got.restartUncounted, c.want.restartUncounted) || got.uncountedRestarts != c.want.uncountedRestarts {
				t.Fatalf("restart %v uncounted %v (%d), want %v uncounted %v (%d)", got.restart, got.restartUncounted, got.uncountedRestarts,
					c.want.restart, c.want.restartUncounted, c.want.uncountedRestarts)
			}
			for i := range got.restart {
				if got.restart[i] != c.want.restart[i] {
					t.Fatalf("restart %v, want %v", got.restart, c.want.restart)
				}
			}
			if got.failReason != "" && got.failMessage == "" {
				t.Errorf("a failure needs a message")
			}
			if got.causeReplica != c.want.causeReplica {
				t.Errorf("cause replica %d, want %d", got.causeReplica, c.want.causeReplica)
			}
		})
	}
}

func TestComputePhase(t *testing.T) {
	P, R, S, F := copsev1alpha1.PodCliqueSetPhasePending, copsev1alpha1.PodCliqueSetPhaseRunning, copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed
	cases := []struct {
		name string
		in   phaseInputs
		want copsev1alpha1.PodCliqueSetPhase
	}{
		{"new workload is Pending", phaseInputs{training: true}, P},
		{"a replica whose pods started makes it Running, ready or not", phaseInputs{training: true, previous: P, started: true}, R},
		{"Running is kept while a replica restarts", phaseInputs{training: true, previous: R, activePods: 3}, R},
		{"all PodCliques succeeded", phaseInputs{training: true, previous: R, succeeded: true}, S},
		{"succeeded straight from Pending (fast pods)", phaseInputs{training: true, previous: P, succeeded: true}, S},
		{"failing waits for pods to be terminated", phaseInputs{training: true, previous: R, failing: true, activePods: 2}, R},
		{"failing with no pod left is Failed", phaseInputs{training: true, previous: R, failing: true}, F},
		{"failing wins over a success seen later", phaseInputs{training: true, previous: R, failing: true, succeeded: true}, F},
		{"Succeeded is terminal", phaseInputs{training: true, previous: S, failing: true}, S},
		{"Failed is terminal", phaseInputs{training: true, previous: F, started: true, succeeded: true}, F},
		{"Inference never succeeds", phaseInputs{previous: R, succeeded: true, started: true}, R},
		{"Inference never fails", phaseInputs{previous: R, failing: true}, R},
		{"Inference Pending until a replica runs", phaseInputs{}, P},
		{"SuccessCriteriaMet waits for the lingering pods", phaseInputs{training: true, previous: R, successCriteriaMet: true, activePods: 2}, R},
		{"SuccessCriteriaMet with no pod left is Succeeded", phaseInputs{training: true, previous: R, successCriteriaMet: true}, S},
		{"SuccessCriteriaMet is never Failed", phaseInputs{training: true, previous: R, successCriteriaMet: true, failing: true}, S},
		{"a met policy without its condition yet is not Succeeded", phaseInputs{training: true, previous: R, activePods: 2, started: true}, R},
		{"suspended, pods still going away: Running is kept", phaseInputs{training: true, previous: R, suspended: true, activePods: 2}, R},
		{"suspended with no pod left is Pending", phaseInputs{training: true, previous: R, suspended: true, started: true}, P},
		{"suspended Inference with no pod left is Pending", phaseInputs{previous: R, suspended: true}, P},
		{"suspended, all replicas succeeded: Succeeded", phaseInputs{training: true, previous: R, suspended: true, succeeded: true}, S},
		{"suspended and failing with no pod left: Failed", phaseInputs{training: true, previous: R, suspended: true, failing: true}, F},
		{"resumed: Running again once a replica started", phaseInputs{training: true, previous: P, started: true}, R},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := computePhase(c.in); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
