package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Time limits of a run.
const (
	// workloadDeadline bounds one workload from its creation to its end.
	workloadDeadline = 6 * time.Minute
	// monitorInterval is how often a workload's state is read from the
	// harness's informer cache (in memory: the API server sees one watch
	// per kind, whatever the interval).
	monitorInterval = 100 * time.Millisecond
	// createTimeout bounds the retries of a creation refused while the
	// operator, which serves the webhooks, is down.
	createTimeout = 2 * time.Minute
)

// EventReasons are GREP-0285's event reasons; a run must produce each.
var EventReasons = []string{"PodCliqueFailed", "ReplicaRestarting", "MaxRestartsExceeded", "MaxRuntimeExceeded", "WorkloadSucceeded"}

// WorkloadRun is one workload as it ran.
type WorkloadRun struct {
	Workload
	Namespace      string
	Created, Ended time.Time
	Observed       End
	// Injected names the pod failed by hand, for a tolerated failure;
	// Released is set once its replacement ran and every pod was told to
	// exit 0.
	Injected string
	Released bool
	// Events counts the workload's events by reason.
	Events     map[string]int
	Violations []string

	history         *framework.History
	victimPodClique string
	podsAfterEnd    map[types.UID]bool
	// What the monitor saw last, to check that it only moves forward.
	phase        copsev1alpha1.PodCliqueSetPhase
	startTime    *metav1.Time
	restartCount int32
	failedReason string
}

func (run *WorkloadRun) violate(format string, args ...any) {
	run.Violations = append(run.Violations, fmt.Sprintf(format, args...))
}

type runner struct {
	env    *framework.Env
	plan   Plan
	cfg    Config
	out    io.Writer
	cache  ctrlcache.Cache
	killer *killer
	start  time.Time
	runs   []*WorkloadRun
}

// Run carries out the plan of cfg against env's cluster and operator and
// reports what happened. An error means the harness could not run; the
// invariants that did not hold are in the report.
func Run(ctx context.Context, env *framework.Env, cfg Config, out io.Writer) (*Report, error) {
	plan, err := NewPlan(cfg.Seed, cfg.Workloads, cfg.Kills)
	if err != nil {
		return nil, err
	}
	r := &runner{env: env, plan: plan, cfg: cfg, out: out, start: time.Now()}
	r.printPlan()

	cacheCtx, stopCache := context.WithCancel(ctx)
	defer stopCache()
	if r.cache, err = startCache(cacheCtx, env); err != nil {
		return nil, err
	}
	r.killer = newKiller(env.Operator, len(plan.Kills), out, r.start)
	killsDone := make(chan struct{})
	go func() {
		defer close(killsDone)
		r.killer.run(ctx, len(plan.Kills))
	}()
	superviseCtx, stopSupervising := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		r.killer.supervise(superviseCtx)
	}()
	defer func() {
		stopSupervising()
		<-supervised
	}()

	slots := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	for _, w := range plan.Workloads {
		run := &WorkloadRun{Workload: w, Events: map[string]int{}}
		r.runs = append(r.runs, run)
		select {
		case <-ctx.Done():
			run.violate("not started: %v", ctx.Err())
			continue
		case slots <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r.runWorkload(ctx, run)
		}()
	}
	wg.Wait()
	select {
	case <-killsDone:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the last kills: %w", ctx.Err())
	}
	return r.finish(ctx), nil
}

func startCache(ctx context.Context, env *framework.Env) (ctrlcache.Cache, error) {
	c, err := ctrlcache.New(env.Cluster.RESTConfig(), ctrlcache.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("harness cache: %w", err)
	}
	go func() { _ = c.Start(ctx) }()
	for _, obj := range []client.Object{&copsev1alpha1.PodCliqueSet{}, &corev1.Pod{}, &eventsv1.Event{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("harness cache: informer for %T: %w", obj, err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("harness cache: not synced")
	}
	return c, nil
}

func (r *runner) printPlan() {
	how := "drawn from the clock"
	if r.cfg.SeedFromEnv {
		how = "from " + EnvSeed
	}
	fmt.Fprintf(r.out, "[chaos] seed %d (%s); replay with: make chaos %s=%d %s=%d %s=%d\n", r.plan.Seed, how,
		EnvSeed, r.plan.Seed, EnvWorkloads, r.cfg.Workloads, EnvKills, r.cfg.Kills)
	fmt.Fprintf(r.out, "[chaos] %d workloads, %d at a time; %d operator kills\n", len(r.plan.Workloads), r.cfg.Concurrency, len(r.plan.Kills))
	for _, w := range r.plan.Workloads {
		fmt.Fprintf(r.out, "[chaos]   %s %-17s %-40s %-45s expect %s\n", w.Name, w.Scenario, w.Shape(), w.History(), w.Expected)
	}
	for _, k := range r.plan.Kills {
		fmt.Fprintf(r.out, "[chaos]   kill %d: %s on w%02d, %s after it, down %s\n", k.Index, k.Trigger, k.Workload, k.Delay, k.Down)
	}
}

// runWorkload creates the workload, watches it to its end while firing
// the kills aimed at it, and checks it.
func (r *runner) runWorkload(ctx context.Context, run *WorkloadRun) {
	var kills []Kill
	for _, k := range r.plan.Kills {
		if k.Workload == run.Index {
			kills = append(kills, k)
		}
	}
	timers := map[int]*time.Timer{}
	// A moment that never came (the workload ended first, or never
	// started) fires its kill at the end, so that every planned kill
	// happens; fire ignores kills already fired.
	fireRest := func() {
		for _, k := range kills {
			if timers[k.Index] == nil {
				r.killer.fire(k, fmt.Sprintf("%s moment not seen before the end", k.Trigger))
			}
		}
	}
	defer fireRest()

	if err := r.create(ctx, run); err != nil {
		run.violate("%v", err)
		return
	}
	fmt.Fprintf(r.out, "[chaos] %s %s created in namespace %s\n", clock(r.start, run.Created), run.Name, run.Namespace)
	for _, k := range kills {
		if k.Trigger == TriggerUniform {
			timers[k.Index] = time.AfterFunc(k.Delay, func() { r.killer.fire(k, "uniform") })
		}
	}

	ended := r.monitor(ctx, run, kills)
	fireRest()
	if !ended {
		run.history.Stop()
		return
	}
	fmt.Fprintf(r.out, "[chaos] %s %s ended %s (expected %s) after %s\n", clock(r.start, run.Ended), run.Name,
		run.phase, run.Expected, run.Ended.Sub(run.Created).Round(100*time.Millisecond))
	r.checkEnd(ctx, run)
	fmt.Fprintf(r.out, "[chaos] %s %s checked: %s, %d violation(s)\n", clock(r.start, time.Now()), run.Name, run.Observed, len(run.Violations))
}

// create makes the workload's namespace, starts recording its pods and
// PodGroups, and creates its PodCliqueSet, retrying while the webhooks are
// down with the operator.
func (r *runner) create(ctx context.Context, run *WorkloadRun) error {
	ns, err := framework.CreateNamespace(ctx, r.env.Client, "chaos-"+run.Name)
	if err != nil {
		return err
	}
	run.Namespace = ns
	if run.history, err = framework.RecordHistory(ctx, r.env.Clientset, ns); err != nil {
		return err
	}
	pcs := run.PodCliqueSet(ns)
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, createTimeout, true, func(ctx context.Context) (bool, error) {
		lastErr = r.env.Client.Create(ctx, pcs.DeepCopy())
		return lastErr == nil || apierrors.IsAlreadyExists(lastErr), nil
	})
	if err != nil {
		run.history.Stop()
		return fmt.Errorf("create PodCliqueSet %s/%s: %w (last error: %v)", ns, PodCliqueSetName, err, lastErr)
	}
	run.Created = time.Now()
	return nil
}

// monitor follows the workload until it is terminal, checking that its
// status only moves forward, failing the victim pod of a tolerated
// failure, and firing the kills whose moment comes. It returns false when
// the workload did not end.
func (r *runner) monitor(ctx context.Context, run *WorkloadRun, kills []Kill) bool {
	key := client.ObjectKey{Namespace: run.Namespace, Name: PodCliqueSetName}
	deadline := run.Created.Add(workloadDeadline)
	ticker := time.NewTicker(monitorInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			run.violate("stopped before the end: %v", ctx.Err())
			return false
		case <-ticker.C:
		}
		pcs := &copsev1alpha1.PodCliqueSet{}
		if err := r.cache.Get(ctx, key, pcs); err != nil {
			continue // not in the cache yet
		}
		if time.Now().After(deadline) {
			run.violate("did not end within %s of its creation: %s", workloadDeadline, statusDetail(pcs))
			return false
		}
		run.observe(pcs)
		if run.Victim != nil && !pcs.Status.Phase.IsTerminal() {
			if run.Injected == "" {
				r.injectFailure(ctx, run)
			} else {
				r.releaseAfterReplacement(ctx, run)
			}
		}
		for _, k := range kills {
			if k.Trigger == TriggerUniform || r.killer.hasFired(k.Index) {
				continue
			}
			if cause := r.momentCame(ctx, run, pcs, k.Trigger); cause != "" {
				r.killer.fire(k, cause)
			}
		}
		if pcs.Status.Phase.IsTerminal() {
			run.Ended = time.Now()
			if run.Victim != nil && run.Injected == "" {
				run.violate("the tolerated failure was never injected: the workload never had all its pods ready")
			}
			return true
		}
	}
}

// observe checks that the status moves only forward: no phase after a
// terminal one, no Running back to Pending, startTime set once,
// restartCount never lower and never above the budget, the Failed reason
// never changed.
func (run *WorkloadRun) observe(pcs *copsev1alpha1.PodCliqueSet) {
	st := pcs.Status
	if st.Phase != run.phase {
		switch {
		case run.phase.IsTerminal():
			run.violate("phase went from terminal %s to %s", run.phase, st.Phase)
		case run.phase == copsev1alpha1.PodCliqueSetPhaseRunning && st.Phase == copsev1alpha1.PodCliqueSetPhasePending:
			run.violate("phase went from Running back to Pending")
		}
		run.phase = st.Phase
	}
	switch {
	case run.startTime == nil:
		run.startTime = st.StartTime.DeepCopy()
	case st.StartTime == nil || !st.StartTime.Equal(run.startTime):
		run.violate("startTime changed from %s to %v", run.startTime.UTC().Format(time.RFC3339), st.StartTime)
		run.startTime = st.StartTime.DeepCopy()
	}
	if st.RestartCount < run.restartCount {
		run.violate("restartCount went down from %d to %d", run.restartCount, st.RestartCount)
	}
	if st.RestartCount > run.MaxRestarts && st.RestartCount != run.restartCount {
		run.violate("restartCount %d is above maxRestarts %d", st.RestartCount, run.MaxRestarts)
	}
	run.restartCount = st.RestartCount
	if reason := failedReason(pcs); reason != run.failedReason {
		if run.failedReason != "" {
			run.violate("the Failed reason changed from %s to %q", run.failedReason, reason)
		}
		run.failedReason = reason
	}
}

// injectFailure fails the victim pod once every pod of the workload, in
// every replica, runs and is ready: the failure is one the victim's clique
// tolerates, and no pod is created after releaseAfterReplacement.
func (r *runner) injectFailure(ctx context.Context, run *WorkloadRun) {
	selector, err := run.victimCliqueSelector()
	if err != nil {
		run.violate("%v", err)
		run.Injected = "impossible"
		return
	}
	var pods corev1.PodList
	if err := r.cache.List(ctx, &pods, client.InNamespace(run.Namespace)); err != nil {
		return
	}
	if len(pods.Items) != run.totalPods() {
		return
	}
	var victim *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || !framework.IsReady(p) || p.DeletionTimestamp != nil {
			return
		}
		if labelsMatch(p.Labels, selector) && p.Labels[labels.PodIndexKey] == strconv.Itoa(int(run.Victim.Index)) {
			victim = p
		}
	}
	if victim == nil {
		return
	}
	if err := r.env.PatchPodExit(ctx, victim, "1"); err != nil {
		fmt.Fprintf(r.out, "[chaos] %s: %v (retrying)\n", run.Name, err)
		return
	}
	run.Injected = victim.Name
	run.victimPodClique = victim.Labels[labels.PodCliqueKey]
	fmt.Fprintf(r.out, "[chaos] %s %s: failed pod %s of %s, a loss its clique tolerates\n", clock(r.start, time.Now()), run.Name, victim.Name, run.victimPodClique)
}

// releaseAfterReplacement makes every pod of a tolerated-failure workload
// exit 0 once the victim's replacement runs. Called on every pass after
// that too, it tells any pod it has not told yet.
func (r *runner) releaseAfterReplacement(ctx context.Context, run *WorkloadRun) {
	var pods corev1.PodList
	if err := r.cache.List(ctx, &pods, client.InNamespace(run.Namespace)); err != nil {
		return
	}
	if !run.Released {
		replaced := false
		for _, p := range pods.Items {
			if p.Labels[labels.PodCliqueKey] == run.victimPodClique && p.Labels[labels.PodIndexKey] == strconv.Itoa(int(run.Victim.Index)) &&
				p.Name != run.Injected && p.Status.Phase == corev1.PodRunning {
				replaced = true
			}
		}
		if !replaced {
			return
		}
		run.Released = true
		fmt.Fprintf(r.out, "[chaos] %s %s: the replacement of %s runs; every pod told to exit 0\n", clock(r.start, time.Now()), run.Name, run.Injected)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if framework.IsTerminal(p) || p.DeletionTimestamp != nil || p.Annotations[cluster.AnnotationRunDuration] != "" {
			continue
		}
		if err := r.env.PatchPodExit(ctx, p, "0"); err != nil {
			fmt.Fprintf(r.out, "[chaos] %s: %v (retrying)\n", run.Name, err)
			return
		}
	}
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// momentCame says what shows that trigger's moment has come for the
// workload, or "" while it has not.
func (r *runner) momentCame(ctx context.Context, run *WorkloadRun, pcs *copsev1alpha1.PodCliqueSet, trigger Trigger) string {
	switch trigger {
	case TriggerRestart:
		for _, rec := range pcs.Status.ReplicaRecreations {
			if rec.CompletedAt == nil {
				return fmt.Sprintf("restart of replica %d to attempt %d in progress", rec.ReplicaIndex, rec.Attempt)
			}
		}
		var events eventsv1.EventList
		if err := r.cache.List(ctx, &events, client.InNamespace(run.Namespace)); err == nil {
			for _, e := range events.Items {
				if e.Reason == "ReplicaRestarting" {
					return "ReplicaRestarting event seen"
				}
			}
		}
	case TriggerTerminating:
		if reason := failedReason(pcs); reason != "" && pcs.Status.Phase != copsev1alpha1.PodCliqueSetPhaseFailed {
			return fmt.Sprintf("Failed (%s), pods being terminated", reason)
		}
	case TriggerExit0:
		if pcs.Status.Phase.IsTerminal() {
			return ""
		}
		var pods corev1.PodList
		if err := r.cache.List(ctx, &pods, client.InNamespace(run.Namespace)); err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodSucceeded {
					return "pod " + p.Name + " exited 0"
				}
			}
		}
	}
	return ""
}

// failedReason is the reason of the PodCliqueSet's Failed condition when
// it is True, else "".
func failedReason(pcs *copsev1alpha1.PodCliqueSet) string {
	if c := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

func endOf(pcs *copsev1alpha1.PodCliqueSet) End {
	return End{Phase: pcs.Status.Phase, Reason: failedReason(pcs), RestartCount: pcs.Status.RestartCount}
}

// statusDetail is the part of a PodCliqueSet's status that explains its
// end, for a violation's message.
func statusDetail(pcs *copsev1alpha1.PodCliqueSet) string {
	st := pcs.Status
	s := fmt.Sprintf("phase %q, restartCount %d", st.Phase, st.RestartCount)
	if c := meta.FindStatusCondition(st.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil {
		s += fmt.Sprintf(", Failed=%s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	for _, rec := range st.ReplicaRecreations {
		done := "in progress"
		if rec.CompletedAt != nil {
			done = "completed"
		}
		s += fmt.Sprintf(", replica %d attempt %d %s", rec.ReplicaIndex, rec.Attempt, done)
	}
	if st.LastFailure != nil {
		s += ", last failure: " + st.LastFailure.Summary
	}
	return s
}
