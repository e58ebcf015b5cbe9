package podcliqueset

import (
	"testing"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestDecideTraining(t *testing.T) {
	hour := time.Hour
	start := t0
	breachedAt := func(idx int, since time.Time) replicaHealth {
		return replicaHealth{index: idx, breached: true, breachedSince: since}
	}
	cases := []struct {
		name string
		in   trainingInputs
		want trainingDecision
	}{
		{
			name: "healthy, no limit: nothing to do",
			in:   trainingInputs{replicas: []replicaHealth{{index: 0, available: true}}, now: t0},
			want: trainingDecision{},
		},
		{
			name: "failure with maxRestarts 0 fails at once",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, maxRestarts: 0, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded},
		},
		{
			name: "failure within budget restarts the replica and counts once",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, restartCount: 1, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0}, restartCount: 2},
		},
		{
			name: "only the failed replica restarts",
			in:   trainingInputs{replicas: []replicaHealth{{index: 0, available: true}, breachedAt(1, t0)}, maxRestarts: 3, now: t0},
			want: trainingDecision{restart: []int{1}, restartCount: 1},
		},
		{
			name: "two failures, budget for one: fail, restart none, count unchanged",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0), breachedAt(1, t0)}, maxRestarts: 1, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded},
		},
		{
			name: "two failures, budget for both",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(1, t0), breachedAt(0, t0)}, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0, 1}, restartCount: 2},
		},
		{
			name: "a replica already restarting is not counted again",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, inProgress: map[int]bool{0: true}, restartCount: 1, maxRestarts: 1, now: t0},
			want: trainingDecision{restartCount: 1},
		},
		{
			name: "a terminationDelay set by the user is honoured",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, maxRestarts: 1, terminationDelay: 30 * time.Second, now: t0.Add(10 * time.Second)},
			want: trainingDecision{requeueAfter: 20 * time.Second},
		},
		{
			name: "before maxRuntime: requeue for the remainder",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(45 * time.Minute)},
			want: trainingDecision{requeueAfter: 15 * time.Minute},
		},
		{
			name: "maxRuntime elapsed fails",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded},
		},
		{
			name: "maxRuntime wins over a restart in the same pass",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, maxRestarts: 5, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded},
		},
		{
			name: "already failing: no new decision",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, failing: true, restartCount: 2, maxRestarts: 5, now: t0},
			want: trainingDecision{restartCount: 2},
		},
		{
			name: "terminal: no new decision",
			in:   trainingInputs{replicas: []replicaHealth{breachedAt(0, t0)}, terminal: true, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideTraining(c.in)
			if got.failReason != c.want.failReason || got.restartCount != c.want.restartCount || got.requeueAfter != c.want.requeueAfter {
				t.Fatalf("got fail=%q count=%d requeue=%v, want fail=%q count=%d requeue=%v (message %q)",
					got.failReason, got.restartCount, got.requeueAfter, c.want.failReason, c.want.restartCount, c.want.requeueAfter, got.failMessage)
			}
			if len(got.restart) != len(c.want.restart) {
				t.Fatalf("restart %v, want %v", got.restart, c.want.restart)
			}
			for i := range got.restart {
				if got.restart[i] != c.want.restart[i] {
					t.Fatalf("restart %v, want %v", got.restart, c.want.restart)
				}
			}
			if got.failReason != "" && got.failMessage == "" {
				t.Errorf("a failure needs a message")
			}
		})
	}
}

func TestComputePhase(t *testing.T) {
	training, inference := copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.WorkloadTypeInference
	P, R, S, F := copsev1alpha1.PodCliqueSetPhasePending, copsev1alpha1.PodCliqueSetPhaseRunning, copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed
	cases := []struct {
		name string
		in   phaseInputs
		want copsev1alpha1.PodCliqueSetPhase
	}{
		{"new workload is Pending", phaseInputs{workloadType: training}, P},
		{"a running replica makes it Running", phaseInputs{workloadType: training, previous: P, anyRunning: true}, R},
		{"Running is kept while a replica restarts", phaseInputs{workloadType: training, previous: R, activePods: 3}, R},
		{"all PodCliques succeeded", phaseInputs{workloadType: training, previous: R, allSucceeded: true}, S},
		{"succeeded straight from Pending (fast pods)", phaseInputs{workloadType: training, previous: P, allSucceeded: true}, S},
		{"failing waits for pods to be terminated", phaseInputs{workloadType: training, previous: R, failing: true, activePods: 2}, R},
		{"failing with no pod left is Failed", phaseInputs{workloadType: training, previous: R, failing: true}, F},
		{"failing wins over a success seen later", phaseInputs{workloadType: training, previous: R, failing: true, allSucceeded: true}, F},
		{"Succeeded is terminal", phaseInputs{workloadType: training, previous: S, failing: true}, S},
		{"Failed is terminal", phaseInputs{workloadType: training, previous: F, anyRunning: true, allSucceeded: true}, F},
		{"Inference never succeeds", phaseInputs{workloadType: inference, previous: R, allSucceeded: true, anyRunning: true}, R},
		{"Inference never fails", phaseInputs{workloadType: inference, previous: R, failing: true}, R},
		{"Inference Pending until a replica runs", phaseInputs{workloadType: inference}, P},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := computePhase(c.in); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
