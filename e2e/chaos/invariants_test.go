package chaos

import (
	"strings"
	"testing"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// history builds samples one second apart from a compact script: each
// entry is one sample.
func history(entries ...Sample) []Sample {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Sample, len(entries))
	for i, s := range entries {
		s.At = t0.Add(time.Duration(i) * time.Second)
		out[i] = s
	}
	return out
}

// repeat is n copies of s.
func repeat(n int, s Sample) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func concat(parts ...[]Sample) []Sample {
	var out []Sample
	for _, p := range parts {
		out = append(out, p...)
	}
	return history(out...)
}

func TestGPUsHeldWhileNotRunning(t *testing.T) {
	running := Sample{Running: true, LivePods: 2, GPUPods: []string{"a", "b"}}
	suspendedHolding := Sample{Why: "suspended", LivePods: 2, GPUPods: []string{"a", "b"}}
	suspendedOneLeft := Sample{Why: "suspended", LivePods: 1, GPUPods: []string{"b"}}
	suspendedEmpty := Sample{Why: "suspended"}
	endedHolding := Sample{Why: "ended", LivePods: 1, GPUPods: []string{"w"}}
	for _, tc := range []struct {
		name        string
		samples     []Sample
		bound       time.Duration
		wantChecked int
		wantLines   []string // substrings, one per violation
	}{
		{name: "running workloads hold their GPUs", samples: concat(repeat(100, running)), bound: 5 * time.Second},
		{name: "a suspension that ends its pods within the bound",
			samples: concat(repeat(3, running), repeat(3, suspendedHolding), repeat(2, suspendedOneLeft), repeat(5, suspendedEmpty)),
			bound:   5 * time.Second, wantChecked: 2},
		{name: "a suspension that never ends a lingering pod (issue 24, item 2)",
			samples: concat(repeat(3, running), repeat(2, suspendedHolding), repeat(20, suspendedOneLeft)),
			bound:   5 * time.Second, wantChecked: 2, wantLines: []string{"GPU pod b stayed bound for 21s (over 5s) while its workload was suspended"}},
		{name: "an ended workload whose pod is still bound at the last sample",
			samples: concat(repeat(2, running), repeat(10, endedHolding)),
			bound:   5 * time.Second, wantChecked: 1, wantLines: []string{"GPU pod w stayed bound for 9s (over 5s) while its workload was ended"}},
		{name: "resumed before the bound: the stretch ends",
			samples: concat(repeat(4, suspendedHolding), repeat(10, running), repeat(4, suspendedHolding)),
			bound:   5 * time.Second, wantChecked: 4},
		{name: "a pod bound to a workload never admitted",
			samples: concat(repeat(8, Sample{Why: "not admitted", Queued: true, LivePods: 1, GPUPods: []string{"q"}})),
			bound:   5 * time.Second, wantChecked: 1, wantLines: []string{"GPU pod q stayed bound for 7s (over 5s) while its workload was not admitted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, lines := GPUsHeldWhileNotRunning(tc.samples, tc.bound)
			if checked != tc.wantChecked {
				t.Errorf("checked %d stretches, want %d", checked, tc.wantChecked)
			}
			assertLines(t, lines, tc.wantLines)
		})
	}
}

func TestQuotaHeldWithoutPods(t *testing.T) {
	admitted := Sample{Running: true, Queued: true, QuotaReserved: true, LivePods: 3}
	justAdmitted := Sample{Running: true, Queued: true, QuotaReserved: true}
	evictedGoing := Sample{Why: "not admitted", Queued: true, QuotaReserved: true, LivePods: 2}
	evictedEmptyHeld := Sample{Why: "not admitted", Queued: true, QuotaReserved: true}
	requeued := Sample{Why: "not admitted", Queued: true}
	endedHeld := Sample{Why: "ended", Queued: true, QuotaReserved: true}
	for _, tc := range []struct {
		name        string
		samples     []Sample
		wantChecked int
		wantLines   []string
	}{
		{name: "admitted, pods not created yet: the quota is in use", samples: concat(repeat(20, justAdmitted), repeat(5, admitted))},
		{name: "evicted: the quota goes once the pods are gone",
			samples: concat(repeat(3, admitted), repeat(4, evictedGoing), repeat(2, evictedEmptyHeld), repeat(5, requeued)), wantChecked: 1},
		{name: "evicted: the quota is never given back",
			samples: concat(repeat(3, admitted), repeat(2, evictedGoing), repeat(12, evictedEmptyHeld)), wantChecked: 1,
			wantLines: []string{"Kueue kept its quota for 11s (over 5s) with no pod left while the workload was not admitted"}},
		{name: "ended, the Workload never finished", samples: concat(repeat(2, admitted), repeat(9, endedHeld)), wantChecked: 1,
			wantLines: []string{"Kueue kept its quota for 8s (over 5s) with no pod left while the workload was ended"}},
		{name: "a workload not queued holds no quota",
			samples: concat(repeat(10, Sample{Why: "ended", QuotaReserved: true}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, lines := QuotaHeldWithoutPods(tc.samples, 5*time.Second)
			if checked != tc.wantChecked {
				t.Errorf("checked %d stretches, want %d", checked, tc.wantChecked)
			}
			assertLines(t, lines, tc.wantLines)
		})
	}
}

func TestCheckEnd(t *testing.T) {
	ok := End{State: StateSucceeded, RestartCount: 1}
	spent := End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: 2}
	for _, tc := range []struct {
		name             string
		expected, actual End
		ended            bool
		took             time.Duration
		wantLines        []string
	}{
		{name: "as expected in time", expected: ok, actual: ok, ended: true, took: time.Minute},
		{name: "a refusal as expected", expected: End{State: StateRefused, Reason: FieldName}, actual: End{State: StateRefused, Reason: FieldName}, ended: true},
		{name: "never ended and nothing says why (issue 24, item 1: the gate that stays closed)", expected: ok,
			wantLines: []string{"did not end within 6m0s of its creation, and no condition says why it cannot progress; the oracle says Succeeded/1"}},
		{name: "ended too late", expected: ok, actual: ok, ended: true, took: 7 * time.Minute,
			wantLines: []string{"ended Succeeded/1 only after 7m0s, over the bound of 6m0s"}},
		{name: "ended otherwise", expected: ok, actual: End{State: StateSucceeded}, ended: true, took: time.Second,
			wantLines: []string{"ended Succeeded/0, the oracle says Succeeded/1"}},
		{name: "out of budget with a restart judged in the failing pass, not made and not counted", expected: spent, actual: End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: 1},
			ended: true, took: time.Second},
		{name: "out of budget counting more than the budget", expected: spent, actual: End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: 3},
			ended: true, took: time.Second, wantLines: []string{"ended Failed(MaxRestartsExceeded)/3, the oracle says Failed(MaxRestartsExceeded)/2"}},
		{name: "a success counts exactly", expected: ok, actual: End{State: StateSucceeded, RestartCount: 0}, ended: true, took: time.Second,
			wantLines: []string{"ended Succeeded/0, the oracle says Succeeded/1"}},
		{name: "accepted where the oracle refuses (issue 24, item 4)", expected: End{State: StateRefused, Reason: FieldName},
			actual: End{State: StateAccepted, Reason: "created"}, ended: true,
			wantLines: []string{"ended Accepted(created), the oracle says Refused(metadata.name)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertLines(t, CheckEnd(tc.expected, tc.actual, tc.ended, tc.took, workloadDeadline), tc.wantLines)
		})
	}
}

func assertLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d violation(s) %q, want %d %q", len(got), got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("violation %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}
