package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

const (
	// settleTimeout is how long an ended workload's pods may take to lose
	// their outcome finalizer and their owners to be in place; kills of the
	// operator in the meantime slow it down.
	settleTimeout = 2 * time.Minute
	// finalSettle is how long the last operator runs before the final
	// check, so that a wrong decision it would take has time to show.
	finalSettle = 5 * time.Second
	// maxLinesPerInvariant keeps a broken invariant from flooding the report.
	maxLinesPerInvariant = 5
)

// checkEnd checks an ended workload against the oracle and the
// invariants of docs/training.md.
func (r *runner) checkEnd(ctx context.Context, run *WorkloadRun) {
	defer run.history.Stop()
	st, err := readUnit(ctx, r.env.Client, run.unit)
	if err != nil {
		run.violate(InvariantHarness, "read the workload after its end: %v", err)
		return
	}
	for _, line := range CheckEnd(run.Expected, run.Observed, true, run.Ended.Sub(run.Created), workloadDeadline) {
		run.violate(InvariantEnd, "%s; %s", line, st.detail(run.unit))
	}
	if run.Observed.State == StateBlocked {
		return
	}
	if run.Kind == KindPodCliqueSet && st.PCS != nil && run.Observed.State == StateSucceeded && run.Suspensions() == 0 {
		run.checkAttempts(st.PCS)
	}

	// Read after the end: the operator saw at most what the API server
	// holds now, so a pod still running here held its node when the
	// workload was declared ended. (A TrainJob's end is its backend's
	// condition, written before its pods are gone: the gpu invariant bounds
	// them.)
	pods := st.Pods
	if run.Kind == KindPodCliqueSet {
		for _, p := range pods {
			if !framework.IsTerminal(&p) {
				run.violate(InvariantAfterEnd, "pod %s is %s on node %q (terminating: %t) after the workload ended %s",
					p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, run.Observed.State)
			}
		}
	}
	if run.hasPodCliqueSet() {
		r.checkReplacements(ctx, run)
		// The last answer read counts: a poll that ends with its context
		// may have failed to read, which proves nothing.
		var finalizers, orphans []string
		readOnce := false
		_ = wait.PollUntilContextTimeout(ctx, time.Second, settleTimeout, true, func(pollCtx context.Context) (bool, error) {
			f, o, err := r.leftovers(pollCtx, run.unit)
			if err != nil {
				return false, nil
			}
			finalizers, orphans, readOnce = f, o, true
			return len(f)+len(o) == 0, nil
		})
		if !readOnce {
			run.violate(InvariantHarness, "could not read the pods after the end")
		}
		if len(finalizers) > 0 {
			run.violate(InvariantAfterEnd, "pods keep the %s finalizer %s after the end: %s", copsev1alpha1.OutcomeFinalizer, settleTimeout, strings.Join(finalizers, ", "))
		}
		if len(orphans) > 0 {
			run.violate(InvariantAfterEnd, "orphaned pods %s after the end: %s", settleTimeout, strings.Join(orphans, "; "))
		}
	}

	after, err := r.pods(ctx, run.unit)
	if err != nil {
		run.violate(InvariantHarness, "%v", err)
		return
	}
	before := map[types.UID]bool{}
	for _, p := range pods {
		before[p.UID] = true
	}
	run.podsAfterEnd = map[types.UID]bool{}
	for _, p := range after {
		run.podsAfterEnd[p.UID] = true
		if !before[p.UID] {
			run.violate(InvariantAfterEnd, "pod %s was created after the workload ended", p.Name)
		}
	}
	if slices.ContainsFunc(run.Steps, func(s Step) bool { return s.Kind == StepPreempt }) {
		r.checkPreemptor(ctx, run)
	}

	run.history.Stop() // it relists after a lost watch, so it has no gaps to report
	events := run.history.Events()
	for name, found := range map[string][]string{
		"two runs of a replica overlapped": framework.AttemptOverlaps(events),
		"a gang was made too early":        framework.EarlyGangs(events),
		"an index that exited 0 ran again": framework.RerunSuccesses(events),
		"two pods shared a hostname":       framework.HostnameOverlaps(events),
	} {
		for i, line := range found {
			if i == maxLinesPerInvariant {
				run.violate(InvariantRuns, "%s: %d more", name, len(found)-i)
				break
			}
			run.violate(InvariantRuns, "%s: %s", name, line)
		}
	}
}

// checkAttempts checks a succeeded workload's recreations: each replica
// restarted exactly as often as its injected breaches, each restart
// completed (in place for a workload that restarts in place, its barrier
// lifted), and restartCount is their sum.
func (run *WorkloadRun) checkAttempts(pcs *copsev1alpha1.PodCliqueSet) {
	attempts := map[int32]int32{}
	for _, rec := range pcs.Status.ReplicaRecreations {
		attempts[rec.ReplicaIndex] = rec.Attempt
		if rec.CompletedAt == nil {
			run.violate(InvariantRuns, "replica %d: the restart to attempt %d never completed", rec.ReplicaIndex, rec.Attempt)
		}
		restart := rec.Reason.IsRestart()
		switch {
		case restart && rec.InPlace != run.RestartInPlace:
			run.violate(InvariantRuns, "replica %d: the restart to attempt %d was in place: %v, the workload's strategy says %v", rec.ReplicaIndex, rec.Attempt, rec.InPlace, run.RestartInPlace)
		case rec.InPlace && rec.BarrierLiftedAt == nil:
			run.violate(InvariantRuns, "replica %d: the restart in place to attempt %d never lifted its barrier", rec.ReplicaIndex, rec.Attempt)
		}
	}
	var sum int32
	for r, f := range run.Injected().FailuresPerReplica() {
		if got := attempts[int32(r)]; got != int32(f) {
			run.violate(InvariantRuns, "replica %d succeeded in attempt %d; its first %d run(s) were to end in a breach", r, got, f)
		}
		sum += attempts[int32(r)]
	}
	if sum != pcs.Status.RestartCount {
		run.violate(InvariantRuns, "restartCount %d differs from the %d restarts recorded per replica", pcs.Status.RestartCount, sum)
	}
}

// checkReplacements checks every PodClique's podReplacements: one for the
// tolerated failure's PodClique, none elsewhere (pods terminated by a
// restart, a suspension or the workload's end are not replacements).
func (r *runner) checkReplacements(ctx context.Context, run *WorkloadRun) {
	var cliques copsev1alpha1.PodCliqueList
	if err := r.env.Client.List(ctx, &cliques, client.InNamespace(run.Namespace)); err != nil {
		run.violate(InvariantHarness, "list PodCliques: %v", err)
		return
	}
	victimSeen := false
	for _, c := range cliques.Items {
		var want int32
		if c.Name == run.victimPodClique {
			want, victimSeen = 1, true
		}
		if c.Status.PodReplacements != want {
			run.violate(InvariantRuns, "PodClique %s has podReplacements %d, want %d", c.Name, c.Status.PodReplacements, want)
		}
	}
	if run.victimPodClique != "" && !victimSeen {
		run.violate(InvariantRuns, "the tolerated failure's PodClique %s is gone", run.victimPodClique)
	}
}

// checkPreemptor checks that the preemptor of a preempted workload
// succeeded.
func (r *runner) checkPreemptor(ctx context.Context, run *WorkloadRun) {
	u := unit{Kind: KindPodCliqueSet, Namespace: run.Namespace, Name: PreemptorName, Queued: true}
	var last unitState
	err := wait.PollUntilContextTimeout(ctx, time.Second, settleTimeout, true, func(pollCtx context.Context) (bool, error) {
		st, err := readUnit(pollCtx, r.env.Client, u)
		if err != nil {
			return false, nil
		}
		last = st
		end, ok := st.terminal(u)
		return ok && end.State == StateSucceeded, nil
	})
	if err != nil {
		run.violate(InvariantEnd, "its preemptor did not succeed: %s", last.detail(u))
	}
}

// leftovers lists the unit's pods that keep the outcome finalizer, and
// those not controlled by a PodClique that exists (ended pods are kept for
// their logs, with their PodClique).
func (r *runner) leftovers(ctx context.Context, u unit) (finalizers, orphans []string, err error) {
	pods, err := r.pods(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	var cliques copsev1alpha1.PodCliqueList
	if err := r.env.Client.List(ctx, &cliques, client.InNamespace(u.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("list PodCliques of %s: %w", u.Namespace, err)
	}
	uids := map[string]types.UID{}
	for _, c := range cliques.Items {
		uids[c.Name] = c.UID
	}
	for _, p := range pods {
		if slices.Contains(p.Finalizers, copsev1alpha1.OutcomeFinalizer) {
			finalizers = append(finalizers, p.Name)
		}
		owner := metav1.GetControllerOf(&p)
		switch {
		case owner == nil:
			orphans = append(orphans, p.Name+" has no controller")
		case owner.Kind != "PodClique" || uids[owner.Name] != owner.UID:
			orphans = append(orphans, fmt.Sprintf("%s is controlled by %s %s (uid %s), which does not exist", p.Name, owner.Kind, owner.Name, owner.UID))
		}
	}
	return finalizers, orphans, nil
}

// pods lists the unit's pods from the API server.
func (r *runner) pods(ctx context.Context, u unit) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.env.Client.List(ctx, &pods, client.InNamespace(u.Namespace), u.podSelector()); err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", u, err)
	}
	return pods.Items, nil
}

// finish checks, once the last kill is done and the operator that came
// back has run for a while, that no workload's end changed, and the
// run-wide invariants.
func (r *runner) finish(ctx context.Context, stopSampling context.CancelFunc, sampled <-chan struct{}) *Report {
	rep := &Report{Config: r.cfg, Plan: r.plan, Runs: r.runs, Events: map[string]int{}, Start: r.start, Checked: map[string]int{}}
	rep.Kills, _ = r.killer.done()
	if len(rep.Kills) != len(r.plan.Kills) {
		rep.violate("%d of %d planned kills were done", len(rep.Kills), len(r.plan.Kills))
	}
	for _, k := range rep.Kills {
		if k.Err != nil {
			rep.violate("kill %d: %v", k.Index, k.Err)
		}
	}
	sleep(ctx, finalSettle)
	for _, run := range r.runs {
		if run.podsAfterEnd != nil {
			r.recheck(ctx, run)
		}
		for reason, n := range run.Events {
			rep.Events[reason] += n
		}
	}
	for _, reason := range ImpliedEventReasons(workloadsLivingThroughNoKill(r.runs, rep.Kills), r.plan.Kills) {
		if rep.Events[reason] == 0 {
			rep.violate("no workload got a %s event, which the plan's histories imply", reason)
		}
	}
	for _, line := range matchingLines(r.env.Operator.LogPath(), "panic", 0) {
		rep.violate("operator log: %s", line)
	}
	// The supervisor still runs: the exits of the whole run, this check
	// included.
	_, rep.Exits = r.killer.done()
	for _, e := range rep.Exits {
		if !e.LostLease {
			rep.violate("the operator exited on its own at %s: %v; last log lines:\n%s", clock(r.start, e.At), e.Err, e.LogTail)
		} else if e.LeadingAt.IsZero() {
			rep.violate("the operator lost its Lease at %s and could not be started again: %v", clock(r.start, e.At), e.Err)
		}
	}

	stopSampling()
	<-sampled
	r.mu.Lock()
	for _, f := range r.followed {
		who := ""
		if f.preemptor {
			who = "its preemptor: "
		}
		checked, found := GPUsHeldWhileNotRunning(f.samples, gpuReleaseBound)
		rep.Checked[InvariantGPU] += checked
		for _, line := range found {
			f.run.violate(InvariantGPU, "%s%s", who, line)
		}
		checked, found = QuotaHeldWithoutPods(f.samples, quotaReleaseBound)
		rep.Checked[InvariantQuota] += checked
		for _, line := range found {
			f.run.violate(InvariantQuota, "%s%s", who, line)
		}
	}
	r.mu.Unlock()
	for _, run := range r.runs {
		rep.Checked[InvariantEnd]++
		rep.Checked[InvariantHarness]++
		if !run.Created.IsZero() && run.Observed.State != StateRefused {
			rep.Checked[InvariantStatus]++
		}
		if run.podsAfterEnd != nil {
			rep.Checked[InvariantAfterEnd]++
			rep.Checked[InvariantRuns]++
		}
	}
	for _, run := range r.runs {
		if len(run.Violations) > 0 {
			r.printEvidence(ctx, run)
		}
	}
	rep.Elapsed = time.Since(r.start)
	return rep
}

// evidenceLines bounds the operator log quoted for a workload.
const evidenceLines = 60

// printEvidence prints what explains a workload's violations: its
// violations, its Kubernetes events and the operator's log lines about its
// namespace.
func (r *runner) printEvidence(ctx context.Context, run *WorkloadRun) {
	fmt.Fprintf(r.out, "\n[chaos] ===== evidence for %s (%s %s; namespace %s; %s; %s) =====\n", run.Name, run.Feature, run.Variant,
		run.Namespace, run.Shape(), run.History())
	for _, a := range run.Actions {
		fmt.Fprintf(r.out, "[chaos] action: %s\n", a)
	}
	for _, v := range run.Violations {
		fmt.Fprintf(r.out, "[chaos] violation: %s\n", v)
	}
	if run.Namespace == "" {
		return
	}
	var events eventsv1.EventList
	if err := r.env.Client.List(ctx, &events, client.InNamespace(run.Namespace)); err == nil {
		slices.SortFunc(events.Items, func(a, b eventsv1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		for _, e := range events.Items {
			fmt.Fprintf(r.out, "[chaos] event %s %s %s/%s: %s\n", e.CreationTimestamp.UTC().Format(time.RFC3339), e.Reason,
				e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	for _, line := range matchingLines(r.env.Operator.LogPath(), run.Namespace, evidenceLines) {
		fmt.Fprintf(r.out, "[chaos] operator: %s\n", line)
	}
}

// recheck checks an ended workload again at the end of the run: the same
// end, no pod running (for a PodCliqueSet), none with the finalizer, none
// new; and counts its events, some of which may have been written late.
func (r *runner) recheck(ctx context.Context, run *WorkloadRun) {
	st, err := readUnit(ctx, r.env.Client, run.unit)
	if err != nil {
		run.violate(InvariantHarness, "final check: %v", err)
		return
	}
	switch end, ok := st.terminal(run.unit); {
	case !ok:
		run.violate(InvariantStatus, "final check: the end %s is gone; %s", run.Observed, st.detail(run.unit))
	case run.Kind == KindPodCliqueSet && end != run.Observed,
		run.Kind == KindTrainJob && (end.State != run.Observed.State || end.Reason != run.Observed.Reason):
		run.violate(InvariantStatus, "final check: the end changed from %s to %s; %s", run.Observed, end, st.detail(run.unit))
	}
	for _, p := range st.Pods {
		switch {
		case !run.podsAfterEnd[p.UID]:
			run.violate(InvariantAfterEnd, "final check: pod %s appeared after the end", p.Name)
		case run.Kind == KindPodCliqueSet && !framework.IsTerminal(&p):
			run.violate(InvariantAfterEnd, "final check: pod %s is %s", p.Name, p.Status.Phase)
		case slices.Contains(p.Finalizers, copsev1alpha1.OutcomeFinalizer):
			run.violate(InvariantAfterEnd, "final check: pod %s has the %s finalizer again", p.Name, copsev1alpha1.OutcomeFinalizer)
		}
	}
	var events eventsv1.EventList
	if err := r.env.Client.List(ctx, &events, client.InNamespace(run.Namespace)); err != nil {
		run.violate(InvariantHarness, "final check: list events: %v", err)
		return
	}
	for _, e := range events.Items {
		if slices.Contains(EventReasons, e.Reason) && e.Regarding.Name == run.ObjectName {
			run.Events[e.Reason]++
		}
	}
}

// matchingLines are the lines of the file at path that contain substr
// (case-insensitive), the last limit of them when limit > 0; the start of
// each operator run ("=====") is kept as a landmark.
func matchingLines(path, substr string, limit int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{fmt.Sprintf("cannot read %s: %v", path, err)}
	}
	defer func() { _ = f.Close() }()
	var out []string
	substr = strings.ToLower(substr)
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(strings.ToLower(line), substr) || (limit > 0 && strings.HasPrefix(line, "=====")) {
			out = append(out, line)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// workloadsLivingThroughNoKill are the workloads no operator kill came
// between the creation and the end of. Events are best effort: the
// recorder sends them after the status write that made the transition
// durable, so a SIGKILL right after a write, whichever workload the kill
// was planned on, can lose the event while the transition stays (a
// uniform kill of one workload landed just as the new leader failed
// another with MaxRuntimeExceeded). Only the others must show the
// events their histories imply.
func workloadsLivingThroughNoKill(runs []*WorkloadRun, kills []KillRecord) []Workload {
	var out []Workload
	for _, run := range runs {
		ended := run.Ended
		if ended.IsZero() {
			ended = time.Now()
		}
		killed := false
		for _, k := range kills {
			if !k.KilledAt.Before(run.Created) && !k.KilledAt.After(ended) {
				killed = true
			}
		}
		if !killed {
			out = append(out, run.Workload)
		}
	}
	return out
}
