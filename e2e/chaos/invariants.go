package chaos

import (
	"fmt"
	"slices"
	"time"
)

// Bounds the run-wide invariants are held to.
const (
	// workloadDeadline bounds one workload from its creation to its end
	// (or to the condition that says why it cannot progress).
	workloadDeadline = 6 * time.Minute
	// quotaReleaseBound bounds how long Kueue may keep a workload's quota
	// once the workload is not running and has no pod left.
	quotaReleaseBound = time.Minute
	// gpuReleaseBound bounds how long a GPU pod may stay bound to a node
	// while its workload is not running (suspended, ended, not admitted):
	// the grace period, an operator killed meanwhile (down up to 3 s, then
	// a Lease to take over) and a loaded machine fit well within it.
	gpuReleaseBound = time.Minute
)

// Invariants, as the report names them.
const (
	InvariantEnd      = "end"       // ends as its history implies (or says why) within workloadDeadline
	InvariantStatus   = "status"    // status only moves forward
	InvariantAfterEnd = "after-end" // once ended: no pod runs, none is created, none keeps the outcome finalizer or lacks its PodClique
	InvariantRuns     = "runs"      // runs of a replica never overlap, no early gang, exit 0 is final, no two pods share a hostname, one replacement per tolerated failure
	InvariantQuota    = "quota"     // Kueue's quota released once a workload that is not running has no pod left
	InvariantGPU      = "gpu"       // no GPU pod bound to a workload that is not running for longer than gpuReleaseBound
	InvariantHarness  = "harness"   // the harness could do what the plan says
)

// AllInvariants in the order of the report, with what each checks.
var AllInvariants = []struct{ Name, Rule string }{
	{InvariantEnd, fmt.Sprintf("ends as its injected history implies, or says why it cannot progress, within %s of its creation", workloadDeadline)},
	{InvariantStatus, "phase, startTime, restartCount and terminal conditions only move forward; counted and uncounted restarts stay within their limits; no failure rule after SuccessCriteriaMet"},
	{InvariantAfterEnd, "once ended, no pod runs or is created, keeps the outcome finalizer or lacks its PodClique"},
	{InvariantRuns, "runs of a replica never overlap, no gang before the old run is gone, exit 0 is final, no two pods share a hostname, replacements counted once"},
	{InvariantQuota, fmt.Sprintf("quota Kueue reserved is released within %s once its workload is not running and has no pod left", quotaReleaseBound)},
	{InvariantGPU, fmt.Sprintf("no GPU pod stays bound for more than %s to a workload that is not running (suspended, ended, not admitted)", gpuReleaseBound)},
	{InvariantHarness, "the harness could carry out the plan"},
}

// Violation is one invariant that did not hold.
type Violation struct {
	Invariant string
	Text      string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Text }

// Sample is what the harness saw of one workload (or of a preemptor) at
// one moment.
type Sample struct {
	At time.Time
	// Running: the workload may hold pods; otherwise Why says why not
	// ("suspended", "ended", "not admitted", "gone").
	Running bool
	Why     string
	// Queued: it waits for Kueue; QuotaReserved: its Kueue Workload holds
	// quota (QuotaReserved=True and not Finished).
	Queued, QuotaReserved bool
	// LivePods counts its pods that have not ended (terminating ones
	// included).
	LivePods int
	// GPUPods are its pods that ask for GPUs, are bound to a node and have
	// not ended (terminating ones included: a GPU is free only once its
	// pod is gone).
	GPUPods []string
}

// span is a stretch of consecutive samples in which something held.
type span struct {
	what     string
	from, to time.Time
	why      string
}

// spans returns, per key, the stretches of consecutive samples in which
// holds(sample) returns that key. A stretch still open at the last sample
// ends there.
func spans(samples []Sample, holds func(Sample) []string) []span {
	open := map[string]*span{}
	var out []span
	for _, s := range samples {
		keys := holds(s)
		for key, sp := range open {
			if !slices.Contains(keys, key) {
				sp.to = s.At
				out = append(out, *sp)
				delete(open, key)
			}
		}
		for _, key := range keys {
			if sp, ok := open[key]; ok {
				sp.to = s.At
			} else {
				open[key] = &span{what: key, from: s.At, to: s.At, why: s.Why}
			}
		}
	}
	for _, sp := range open {
		out = append(out, *sp)
	}
	slices.SortFunc(out, func(a, b span) int { return a.from.Compare(b.from) })
	return out
}

// GPUsHeldWhileNotRunning checks that no GPU pod stayed bound for longer
// than bound while its workload was not running. It returns how many
// stretches of a GPU pod bound to a workload not running it saw, and one
// line per stretch longer than bound.
func GPUsHeldWhileNotRunning(samples []Sample, bound time.Duration) (checked int, violations []string) {
	found := spans(samples, func(s Sample) []string {
		if s.Running {
			return nil
		}
		return s.GPUPods
	})
	for _, sp := range found {
		if d := sp.to.Sub(sp.from); d > bound {
			violations = append(violations, fmt.Sprintf("GPU pod %s stayed bound for %s (over %s) while its workload was %s, from %s",
				sp.what, d.Round(time.Second), bound, sp.why, sp.from.UTC().Format("15:04:05")))
		}
	}
	return len(found), violations
}

// QuotaHeldWithoutPods checks that Kueue released a workload's quota
// within bound once the workload was not running and had no pod left. It
// returns how many stretches of reserved quota without a pod it saw, and
// one line per stretch longer than bound.
func QuotaHeldWithoutPods(samples []Sample, bound time.Duration) (checked int, violations []string) {
	found := spans(samples, func(s Sample) []string {
		if s.Queued && s.QuotaReserved && s.LivePods == 0 && !s.Running {
			return []string{"quota"}
		}
		return nil
	})
	for _, sp := range found {
		if d := sp.to.Sub(sp.from); d > bound {
			violations = append(violations, fmt.Sprintf("Kueue kept its quota for %s (over %s) with no pod left while the workload was %s, from %s",
				d.Round(time.Second), bound, sp.why, sp.from.UTC().Format("15:04:05")))
		}
	}
	return len(found), violations
}

// CheckEnd checks a workload's end against the oracle: it must have ended
// (or said why it cannot progress: an expected Blocked end) within bound
// of its creation, as expected says. took is how long it took; ended is
// false when it had not ended when the harness gave up.
func CheckEnd(expected, observed End, ended bool, took, bound time.Duration) []string {
	var out []string
	switch {
	case !ended:
		out = append(out, fmt.Sprintf("did not end within %s of its creation, and no condition says why it cannot progress; the oracle says %s", bound, expected))
		return out
	case took > bound:
		out = append(out, fmt.Sprintf("ended %s only after %s, over the bound of %s", observed, took.Round(time.Second), bound))
	}
	if !expected.admits(observed) {
		out = append(out, fmt.Sprintf("ended %s, the oracle says %s", observed, expected))
	}
	return out
}
