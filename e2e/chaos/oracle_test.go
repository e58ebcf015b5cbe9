package chaos

import (
	"slices"
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func TestExpectedEnd(t *testing.T) {
	succeeded := func(restarts int32) End { return End{State: StateSucceeded, RestartCount: restarts} }
	budgetSpent := func(restarts int32) End {
		return End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: restarts}
	}
	complete := func(restarts int32) End {
		return End{State: StateComplete, Reason: ReasonAllJobsCompleted, RestartCount: restarts}
	}
	pcs := func(replicas int32, failedRuns int, maxRestarts int32) Injected {
		return Injected{Kind: KindPodCliqueSet, Replicas: replicas, FailedRuns: failedRuns, MaxRestarts: maxRestarts}
	}
	tj := func(failedRuns int, maxRestarts int32) Injected {
		return Injected{Kind: KindTrainJob, Replicas: 1, FailedRuns: failedRuns, MaxRestarts: maxRestarts}
	}
	with := func(in Injected, change func(*Injected)) Injected { change(&in); return in }
	for _, tc := range []struct {
		name    string
		in      Injected
		want    End
		wantErr bool
	}{
		// docs/training.md: the restart budget.
		{name: "no failure", in: pcs(1, 0, 0), want: succeeded(0)},
		// docs/training.md: failure rules.
		{name: "rules: evictions within maxUncountedRestarts restart without spending maxRestarts (0)",
			in:   with(pcs(1, 0, 0), func(in *Injected) { in.FailureRules, in.Evictions, in.MaxUncounted = true, 2, 2 }),
			want: End{State: StateSucceeded, RestartCount: 2, Uncounted: 2}},
		{name: "rules: one eviction more than maxUncountedRestarts fails",
			in:   with(pcs(1, 0, 3), func(in *Injected) { in.FailureRules, in.Evictions, in.MaxUncounted = true, 2, 1 }),
			want: End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxUncountedRestartsExceeded, RestartCount: 1, Uncounted: 1}},
		{name: "rules: exit 42 fails at once, budget left",
			in:   with(pcs(1, 1, 2), func(in *Injected) { in.FailureRules, in.BugExit = true, true }),
			want: End{State: StateFailed, Reason: copsev1alpha1.ReasonFailedByRule}},
		{name: "rules: a TrainJob's exit 42 fails with JobSet's FailJobSet reason",
			in:   with(tj(1, 2), func(in *Injected) { in.FailureRules, in.BugExit = true, true }),
			want: End{State: StateFailed, Reason: "FailJobSetFailurePolicyAction"}},
		{name: "rules change nothing of a history they do not match: exit 1 restarts and counts",
			in:   with(pcs(1, 1, 1), func(in *Injected) { in.FailureRules, in.MaxUncounted = true, 2 }),
			want: succeeded(1)},
		{name: "rules: a TrainJob's eviction restarts uncounted and completes",
			in:   with(tj(0, 0), func(in *Injected) { in.FailureRules, in.Evictions, in.MaxUncounted = true, 1, 1 }),
			want: End{State: StateComplete, Reason: ReasonAllJobsCompleted, RestartCount: 1, Uncounted: 1}},
		{name: "rules: a TrainJob is not planned to run out of uncounted restarts (JobSet has no bound)",
			in:      with(tj(0, 0), func(in *Injected) { in.FailureRules, in.Evictions, in.MaxUncounted = true, 2, 1 }),
			wantErr: true},
		{name: "no failure, three replicas, budget unused", in: pcs(3, 0, 2), want: succeeded(0)},
		{name: "one failure within the budget", in: pcs(1, 1, 1), want: succeeded(1)},
		{name: "failures of two replicas share the budget", in: pcs(2, 1, 2), want: succeeded(2)},
		{name: "two failures of each of two replicas within a budget of 4", in: pcs(2, 2, 4), want: succeeded(4)},
		{name: "a failure with no budget", in: pcs(1, 1, 0), want: budgetSpent(0)},
		{name: "one failure too many: the restarts judged before count", in: pcs(2, 1, 1), want: budgetSpent(1)},
		{name: "many failures too many", in: pcs(3, 3, 2), want: budgetSpent(2)},
		{name: "outlives maxRuntime", in: with(pcs(2, 0, 2), func(in *Injected) { in.OutlivesMaxRuntime = true }),
			want: End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}},
		{name: "outlives maxRuntime and fails: not computable", in: with(pcs(1, 1, 2), func(in *Injected) { in.OutlivesMaxRuntime = true }), wantErr: true},

		// docs/trainjob.md: a TrainJob ends as its PodCliqueSet, in JobSet's words.
		{name: "TrainJob succeeds", in: tj(0, 1), want: complete(0)},
		{name: "TrainJob restarts and succeeds", in: tj(2, 2), want: complete(2)},
		{name: "TrainJob spends its budget", in: tj(3, 2), want: End{State: StateFailed, Reason: ReasonReachedMaxRestarts, RestartCount: 2}},
		{name: "TrainJob outlives a maxRuntime it cannot have", in: with(tj(0, 0), func(in *Injected) { in.OutlivesMaxRuntime = true }), wantErr: true},

		// Issue 24's rules.
		{name: "a name over the limit is refused naming metadata.name", in: with(tj(0, 0), func(in *Injected) { in.NameOverLimit = true }),
			want: End{State: StateRefused, Reason: FieldName}},
		{name: "a PodCliqueSet whose name is over the limit too", in: with(pcs(2, 1, 0), func(in *Injected) { in.NameOverLimit = true }),
			want: End{State: StateRefused, Reason: FieldName}},
		{name: "a queued PodCliqueSet without enough quota says it waits", in: with(pcs(1, 0, 0), func(in *Injected) { in.QuotaShort = true }),
			want: End{State: StateBlocked, Reason: copsev1alpha1.ReasonPending}},
		{name: "a queued TrainJob without enough quota has no condition of its own", in: with(tj(0, 0), func(in *Injected) { in.QuotaShort = true }), wantErr: true},
		{name: "a TrainJob packed at a level no binding has says so", in: with(tj(0, 0), func(in *Injected) { in.TopologyUnresolved = true }),
			want: End{State: StateBlocked, Reason: trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason}},
		{name: "a PodCliqueSet names its binding: no level to resolve", in: with(pcs(1, 0, 0), func(in *Injected) { in.TopologyUnresolved = true }), wantErr: true},
		{name: "a TrainJob whose PodCliqueSet is deleted fails", in: with(tj(0, 2), func(in *Injected) { in.BackendDeleted = true }),
			want: End{State: StateFailed, Reason: ReasonBackendDeleted}},
		{name: "a PodCliqueSet is no TrainJob's backend", in: with(pcs(1, 0, 2), func(in *Injected) { in.BackendDeleted = true }), wantErr: true},
		{name: "a deleted PodClique is a counted restart", in: with(pcs(2, 0, 2), func(in *Injected) { in.DeletedPodCliques = []int32{1} }),
			want: succeeded(1)},
		{name: "a deleted PodClique with no budget fails the workload", in: with(pcs(1, 0, 0), func(in *Injected) { in.DeletedPodCliques = []int32{0} }),
			want: budgetSpent(0)},
		{name: "two deleted PodCliques share the budget", in: with(pcs(2, 0, 1), func(in *Injected) { in.DeletedPodCliques = []int32{0, 1} }),
			want: budgetSpent(1)},
		{name: "a PodClique deleted in a replica that does not exist", in: with(pcs(1, 0, 1), func(in *Injected) { in.DeletedPodCliques = []int32{1} }), wantErr: true},
		{name: "a PodClique deleted while runs fail: not computable", in: with(pcs(1, 1, 2), func(in *Injected) { in.DeletedPodCliques = []int32{0} }), wantErr: true},
		{name: "suspensions consume no restart", in: with(pcs(2, 0, 0), func(in *Injected) { in.Suspensions = 2 }), want: succeeded(0)},
		{name: "an evicted TrainJob completes", in: with(tj(0, 0), func(in *Injected) { in.Suspensions = 1 }), want: complete(0)},
		{name: "a suspended workload whose failures count by attempt: not computable", in: with(pcs(1, 1, 2), func(in *Injected) { in.Suspensions = 1 }), wantErr: true},

		{name: "no replica", in: pcs(0, 0, 0), wantErr: true},
		{name: "negative budget", in: pcs(1, 0, -1), wantErr: true},
		{name: "negative failures", in: pcs(1, -1, 0), wantErr: true},
		{name: "no kind", in: Injected{Replicas: 1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpectedEnd(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ExpectedEnd = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ExpectedEnd: %v", err)
			}
			if got != tc.want {
				t.Errorf("ExpectedEnd = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInjected(t *testing.T) {
	w := Workload{Kind: KindPodCliqueSet, Replicas: 2, MaxRestarts: 1, Variant: VariantOverLimit,
		Cliques: []Clique{{Name: "s0", Pods: 2, GPUs: 1, FailedRuns: 1}, {Name: "s1", Pods: 1, FailedRuns: 2}},
		Queue:   &Queue{GPUQuota: 3},
		Steps: []Step{{Kind: StepDeletePodClique, Replica: 1, Clique: "s0"}, {Kind: StepSuspend, Clique: "s0"}, {Kind: StepResume},
			{Kind: StepPreempt, Clique: "s0"}, {Kind: StepDeactivate, Clique: "s0"}, {Kind: StepReactivate}}}
	in := w.Injected()
	if in.FailedRuns != 2 || !in.NameOverLimit || !in.QuotaShort || in.Suspensions != 3 || !slices.Equal(in.DeletedPodCliques, []int32{1}) {
		t.Errorf("Injected = %+v", in)
	}
	if got := in.FailuresPerReplica(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("FailuresPerReplica = %v, want [2 3]", got)
	}
	w.Queue.GPUQuota = 4
	if w.Injected().QuotaShort {
		t.Error("a quota of 4 GPUs is short for 4 GPU pods")
	}
}

func TestImpliedEventReasons(t *testing.T) {
	plan := func(ends ...End) []Workload {
		var ws []Workload
		for _, e := range ends {
			ws = append(ws, Workload{Kind: KindPodCliqueSet, Replicas: 1, Expected: e})
		}
		return ws
	}
	failing := Workload{Kind: KindPodCliqueSet, Replicas: 1, Cliques: []Clique{{Name: "s0", FailedRuns: 1}},
		Expected: End{State: StateSucceeded, RestartCount: 1}}
	for _, tc := range []struct {
		name      string
		workloads []Workload
		want      []string
	}{
		{"nothing planned", nil, nil},
		{"a success", plan(End{State: StateSucceeded}), []string{"WorkloadSucceeded"}},
		{"a restart after a failed run", []Workload{failing}, []string{"PodCliqueFailed", "ReplicaRestarting", "WorkloadSucceeded"}},
		{"a spent budget and a passed runtime", plan(End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded},
			End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}), []string{"MaxRestartsExceeded", "MaxRuntimeExceeded"}},
		{"refusals, waits and TrainJobs imply none", append(plan(End{State: StateRefused}, End{State: StateBlocked}),
			Workload{Kind: KindTrainJob, Expected: End{State: StateComplete}}), nil},
		{"a passed runtime (none when a kill aims at its transition, below)", plan(End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}),
			[]string{"MaxRuntimeExceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ImpliedEventReasons(tc.workloads, nil); !slices.Equal(got, tc.want) {
				t.Errorf("ImpliedEventReasons = %v, want %v", got, tc.want)
			}
			// Every workload of plan() has index 0: a kill at its
			// transition leaves a one-workload plan implying nothing.
			killed := []Kill{{Trigger: TriggerTerminating, Workload: 0}}
			if got := ImpliedEventReasons(tc.workloads, killed); len(tc.workloads) == 1 && len(got) > 0 {
				t.Errorf("ImpliedEventReasons with a kill at the transition = %v, want none", got)
			}
		})
	}
}
