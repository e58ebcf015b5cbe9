package lifecycle

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/podstate"
)

// The recommended rule set of docs/training.md: disruptions restart without
// spending the budget, exit 42 is a bug that fails at once, a crash of the
// tolerant "eval" clique is replaced.
var recommended = &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
	{Name: "infrastructure", Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount,
		OnPodConditions: []copsev1alpha1.PodConditionRequirement{{Type: corev1.DisruptionTarget}}},
	{Name: "bug", Action: copsev1alpha1.FailureActionFailWorkload,
		OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}},
	{Name: "eval-flaky", Action: copsev1alpha1.FailureActionIgnore, TargetCliques: []string{"eval"}},
	{Name: "not-trainer", Action: copsev1alpha1.FailureActionFailWorkload,
		OnExitCodes: &copsev1alpha1.ExitCodesRequirement{ContainerName: ptr.To("sidecar"), Operator: copsev1alpha1.ExitCodesNotIn, Values: []int32{1}}},
}}

func exited(codes ...int32) *podstate.Failure {
	f := &podstate.Failure{}
	for i, c := range codes {
		f.Exits = append(f.Exits, podstate.ContainerExit{Container: []string{"train", "sidecar", "init"}[i%3], Code: c})
	}
	return f
}

func TestJudgeFailure(t *testing.T) {
	disrupted := exited(137)
	disrupted.Conditions = map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue}
	notDisrupted := exited(137)
	notDisrupted.Conditions = map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionFalse}
	preemptedBug := exited(42)
	preemptedBug.Conditions = disrupted.Conditions

	tests := []struct {
		name    string
		policy  *copsev1alpha1.TrainingFailurePolicy
		clique  string
		failure *podstate.Failure
		want    RuleVerdict
	}{
		{"no policy: restart and count", nil, "worker", exited(42), RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
		{"a preempted pod (DisruptionTarget True), exit 137", recommended, "worker", disrupted,
			RuleVerdict{"infrastructure", copsev1alpha1.FailureActionRestartReplicaWithoutCount}},
		{"first match wins: disrupted before exit 42", recommended, "worker", preemptedBug,
			RuleVerdict{"infrastructure", copsev1alpha1.FailureActionRestartReplicaWithoutCount}},
		{"DisruptionTarget False is not a disruption", recommended, "worker", notDisrupted, RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
		{"exit 42 in any container", recommended, "worker", exited(1, 42), RuleVerdict{"bug", copsev1alpha1.FailureActionFailWorkload}},
		{"exit 1: no rule, restart and count", recommended, "worker", exited(1), RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
		{"a rule without requirements matches every failure of its target clique", recommended, "eval", exited(1),
			RuleVerdict{"eval-flaky", copsev1alpha1.FailureActionIgnore}},
		{"NotIn on a named container: sidecar exited 3", recommended, "worker", exited(1, 3),
			RuleVerdict{"not-trainer", copsev1alpha1.FailureActionFailWorkload}},
		{"NotIn on a named container: sidecar exited 1", recommended, "worker", exited(2, 1), RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
		{"NotIn does not consider other containers", recommended, "worker", exited(3), RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
		{"a pod without a recorded failure matches only rules without requirements", recommended, "eval", nil,
			RuleVerdict{"eval-flaky", copsev1alpha1.FailureActionIgnore}},
		{"a pod without a recorded failure, no such rule", recommended, "worker", nil, RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JudgeFailure(tt.policy, tt.clique, tt.failure); got != tt.want {
				t.Fatalf("verdict %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestNotJudged: the rules judge neither a failure an Ignore rule matches
// nor a kept pod's old process that ended before the kubelet restarted it.
func TestNotJudged(t *testing.T) {
	oldProcess := podstate.Summary{UID: "old", Phase: corev1.PodFailed, Failure: exited(1), Moved: true}
	restarted := podstate.Summary{UID: "restarted", Phase: corev1.PodFailed, Failure: exited(1), Moved: true, ContainerRestarts: 1}
	evalFailed := podstate.Summary{UID: "eval", Phase: corev1.PodFailed, Failure: exited(1)}
	policy := &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
		{Name: "eval-flaky", Action: copsev1alpha1.FailureActionIgnore, TargetCliques: []string{"eval"}},
	}}
	if got := NotJudged(policy, "eval", []podstate.Summary{oldProcess, evalFailed}); len(got) != 2 || !got["old"] || !got["eval"] {
		t.Errorf("eval: not judged %v, want the old process and the ignored failure", got)
	}
	for _, p := range []*copsev1alpha1.TrainingFailurePolicy{policy, nil} {
		if got := NotJudged(p, "worker", []podstate.Summary{oldProcess, restarted}); len(got) != 1 || !got["old"] {
			t.Errorf("worker, policy %v: not judged %v, want only the old process", p != nil, got)
		}
	}
}

func TestIgnoredFailures(t *testing.T) {
	pods := []podstate.Summary{
		{UID: "failed", Phase: corev1.PodFailed, Failure: exited(1)},
		{UID: "running", Phase: corev1.PodRunning},
		{UID: "bug", Phase: corev1.PodFailed, Failure: exited(42)},
	}
	policy := &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
		{Name: "bug", Action: copsev1alpha1.FailureActionFailWorkload,
			OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}},
		{Name: "eval-flaky", Action: copsev1alpha1.FailureActionIgnore, TargetCliques: []string{"eval"}},
	}}
	if got := IgnoredFailures(policy, "eval", pods); len(got) != 1 || !got["failed"] {
		t.Errorf("eval: ignored %v, want only the failed pod no earlier rule matches", got)
	}
	if got := IgnoredFailures(policy, "worker", pods); len(got) != 0 {
		t.Errorf("worker: ignored %v, want none", got)
	}
	if got := IgnoredFailures(nil, "eval", pods); got != nil {
		t.Errorf("no policy: ignored %v", got)
	}
	// A pod being evicted with a normal grace period has not failed yet,
	// but it is already a replica's root cause candidate (disrupted): an
	// Ignore rule's clique must not become one.
	evicted := []podstate.Summary{{UID: "evicted", Phase: corev1.PodRunning, Terminating: true, Disrupted: true,
		Failure: &podstate.Failure{Reason: "EvictionByEvictionAPI", Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue}}}}
	if got := IgnoredFailures(policy, "eval", evicted); !got["evicted"] {
		t.Errorf("eval: ignored %v, want the disrupted pod too", got)
	}
	if got := IgnoredFailures(policy, "worker", evicted); len(got) != 0 {
		t.Errorf("worker: ignored %v, want none", got)
	}
}

// rulesOf reads up to 6 rules, four bytes each: action (low 2 bits),
// target (bit 2: clique "a" only), exit requirement (bits 3-4: none, In,
// NotIn; bit 5: container "train" only) on the value of byte 2 (mod 8),
// condition requirement (bit 6: DisruptionTarget, bit 7 of byte 3: its
// status False rather than True).
func rulesOf(data []byte) []copsev1alpha1.FailureRule {
	src := fuzzinput.New(data)
	actions := []copsev1alpha1.FailureRuleAction{copsev1alpha1.FailureActionFailWorkload, copsev1alpha1.FailureActionRestartReplica,
		copsev1alpha1.FailureActionRestartReplicaWithoutCount, copsev1alpha1.FailureActionIgnore}
	var out []copsev1alpha1.FailureRule
	for i := range min(len(data)/4, 6) {
		b, code, c := src.Byte(), src.Byte(), src.Byte()
		src.Byte()
		rule := copsev1alpha1.FailureRule{Name: fmt.Sprintf("r%d", i), Action: actions[b&3]}
		if b&4 != 0 {
			rule.TargetCliques = []string{"a"}
		}
		if op := (b >> 3) & 3; op == 1 || op == 2 {
			rule.OnExitCodes = &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{int32(code % 8)}}
			if op == 2 {
				rule.OnExitCodes.Operator = copsev1alpha1.ExitCodesNotIn
			}
			if b&32 != 0 {
				rule.OnExitCodes.ContainerName = ptr.To("train")
			}
		}
		if b&64 != 0 {
			status := corev1.ConditionTrue
			if c&128 != 0 {
				status = corev1.ConditionFalse
			}
			rule.OnPodConditions = []copsev1alpha1.PodConditionRequirement{{Type: corev1.DisruptionTarget, Status: status}}
		}
		out = append(out, rule)
	}
	return out
}

// FuzzJudgeFailure checks the rule matcher on any rules and failure:
//   - the verdict is the default one, or a rule's name and action;
//   - first match wins: rules after the matching one never change the
//     verdict, nor does a non-matching rule put before all;
//   - a rule without requirements or targets matches every failure;
//   - for a failure with one exit code, In and NotIn on the same values
//     disagree.
func FuzzJudgeFailure(f *testing.F) {
	f.Add([]byte{0x08, 1, 0, 0, 0x41, 0, 0, 0}, uint8(1), uint8(1), false)
	f.Add([]byte{0x12, 3, 0, 0, 0x04, 0, 0, 0}, uint8(3), uint8(0), true)
	f.Add([]byte{0x2b, 2, 0x80, 0}, uint8(2), uint8(2), false)
	f.Fuzz(func(t *testing.T, data []byte, code, disruption uint8, inCliqueA bool) {
		rules := rulesOf(data)
		failure := &podstate.Failure{Exits: []podstate.ContainerExit{{Container: "train", Code: int32(code % 8)}}}
		switch disruption % 3 {
		case 1:
			failure.Conditions = map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue}
		case 2:
			failure.Conditions = map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionFalse}
		}
		clique := "b"
		if inCliqueA {
			clique = "a"
		}
		policy := &copsev1alpha1.TrainingFailurePolicy{Rules: rules}
		got := JudgeFailure(policy, clique, failure)

		matched := -1
		for i, r := range rules {
			if r.Name == got.Rule {
				matched = i
			}
		}
		switch {
		case got.Rule == "" && got != defaultVerdict:
			t.Fatalf("verdict %+v without a rule", got)
		case got.Rule != "" && (matched < 0 || rules[matched].Action != got.Action):
			t.Fatalf("verdict %+v is no rule's", got)
		}
		if matched >= 0 {
			tail := append(append([]copsev1alpha1.FailureRule{}, rules[:matched+1]...),
				copsev1alpha1.FailureRule{Name: "catch-all", Action: copsev1alpha1.FailureActionFailWorkload})
			if again := JudgeFailure(&copsev1alpha1.TrainingFailurePolicy{Rules: tail}, clique, failure); again != got {
				t.Fatalf("a rule after the matching one changed the verdict: %+v, then %+v", got, again)
			}
		} else {
			all := append(append([]copsev1alpha1.FailureRule{}, rules...), copsev1alpha1.FailureRule{Name: "catch-all", Action: copsev1alpha1.FailureActionIgnore})
			if again := JudgeFailure(&copsev1alpha1.TrainingFailurePolicy{Rules: all}, clique, failure); again.Rule != "catch-all" {
				t.Fatalf("a rule without requirements did not match: %+v", again)
			}
		}
		never := copsev1alpha1.FailureRule{Name: "never", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: []string{"nowhere"}}
		if again := JudgeFailure(&copsev1alpha1.TrainingFailurePolicy{Rules: append([]copsev1alpha1.FailureRule{never}, rules...)}, clique, failure); again != got {
			t.Fatalf("a non-matching rule put first changed the verdict: %+v, then %+v", got, again)
		}
		values := []int32{int32(code % 8)}
		in := copsev1alpha1.FailureRule{Name: "in", Action: copsev1alpha1.FailureActionIgnore,
			OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: values}}
		notIn := in
		notIn.OnExitCodes = &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesNotIn, Values: values}
		if ruleMatches(in, clique, failure) == ruleMatches(notIn, clique, failure) {
			t.Fatalf("In and NotIn %v agree on exit code %d", values, code%8)
		}
	})
}

// TestFirstFailure: the root cause is the pod that failed first, by its
// finish or, for a disrupted pod that has not ended, the time it was marked;
// pods of unknown time come last.
func TestFirstFailure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	failed := func(name string, at time.Time) podstate.Summary {
		return podstate.Summary{Name: name, Phase: corev1.PodFailed, FinishedAt: at}
	}
	evicted := podstate.Summary{Name: "evicted", Phase: corev1.PodRunning, Terminating: true, Disrupted: true, DisruptedAt: t0.Add(time.Second)}
	running := podstate.Summary{Name: "running", Phase: corev1.PodRunning}
	tests := []struct {
		name string
		pods []podstate.Summary
		want string
	}{
		{"none failed", []podstate.Summary{running}, ""},
		{"a disruption before a crash", []podstate.Summary{failed("crash", t0.Add(2*time.Second)), evicted, running}, "evicted"},
		{"a crash before a disruption", []podstate.Summary{failed("crash", t0), evicted}, "crash"},
		{"unknown times last", []podstate.Summary{failed("unknown", time.Time{}), evicted}, "evicted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FirstFailure(tt.pods)
			if (got == nil && tt.want != "") || (got != nil && got.Name != tt.want) {
				t.Fatalf("first failure %+v, want %q", got, tt.want)
			}
		})
	}
}
