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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Time limits of a run.
const (
	// monitorInterval is how often a workload's state is read from the
	// harness's informer cache (in memory: the API server sees one watch
	// per kind, whatever the interval).
	monitorInterval = 100 * time.Millisecond
	// sampleInterval is how often the invariants' samples are taken.
	sampleInterval = 500 * time.Millisecond
	// createTimeout bounds the retries of a creation refused while the
	// operator, which serves the webhooks, is down.
	createTimeout = 2 * time.Minute
)

// WorkloadRun is one workload as it ran.
type WorkloadRun struct {
	Workload
	Namespace      string
	Created, Ended time.Time
	Observed       End
	// InjectedPod names the pod failed by hand, for a tolerated failure;
	// Released is set once its replacement ran and every pod was told to
	// exit 0.
	InjectedPod string
	Released    bool
	// Actions are the steps the harness took, with when.
	Actions []string
	// Events counts the workload's events by reason.
	Events     map[string]int
	Violations []Violation

	unit            unit
	kills           []Kill
	steps           stepProgress
	history         *framework.History
	victimPodClique string
	podsAfterEnd    map[types.UID]bool
	// What the monitor saw last, to check that it only moves forward.
	phase               copsev1alpha1.PodCliqueSetPhase
	startTime           *metav1.Time
	suspendedSinceStart bool
	pcsUID              types.UID
	restartCount        int32
	uncounted           int32
	failedReason        string
	trainJobEnd         End
	backendRestarts     int32
	backendUncounted    int32
	// rulesAtSuccess is the number of failures the failure rules decided
	// when SuccessCriteriaMet was first seen (-1 before).
	rulesAtSuccess int32
}

// maxUncounted is the workload's failurePolicy.maxUncountedRestarts: 0
// without failure rules.
func (run *WorkloadRun) maxUncounted() int32 {
	if !run.FailureRules {
		return 0
	}
	return run.MaxUncounted
}

// observeRulesAfterSuccess checks that no failure rule decides anything
// once the success criteria are met: status.failureRuleMatches stops
// growing, and no restart starts after the condition.
func (run *WorkloadRun) observeRulesAfterSuccess(pcs *copsev1alpha1.PodCliqueSet) {
	met := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
	if met == nil || met.Status != metav1.ConditionTrue {
		return
	}
	var decided int32
	for _, m := range pcs.Status.FailureRuleMatches {
		decided += m.Count
	}
	if run.rulesAtSuccess >= 0 && decided > run.rulesAtSuccess {
		run.violate(InvariantStatus, "failure rules decided %d failures after SuccessCriteriaMet (had %d)", decided, run.rulesAtSuccess)
	}
	run.rulesAtSuccess = decided
	for _, rec := range pcs.Status.ReplicaRecreations {
		restart := rec.Reason.IsRestart()
		if restart && rec.StartedAt.After(met.LastTransitionTime.Time) {
			run.violate(InvariantStatus, "replica %d restarted (%s) at %s, after SuccessCriteriaMet at %s", rec.ReplicaIndex, rec.Reason,
				rec.StartedAt.UTC().Format(time.RFC3339), met.LastTransitionTime.UTC().Format(time.RFC3339))
		}
	}
}

func (run *WorkloadRun) violate(invariant, format string, args ...any) {
	run.Violations = append(run.Violations, Violation{Invariant: invariant, Text: fmt.Sprintf(format, args...)})
}

// followed is a unit the sampler samples, with its samples.
type followed struct {
	unit    unit
	run     *WorkloadRun
	samples []Sample
	// preemptor: a workload's preemptor, not the workload itself.
	preemptor bool
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

	mu       sync.Mutex
	followed []*followed
}

// Run carries out the plan of cfg against env's cluster, operator, JobSet
// controller and Kueue, and reports what happened. An error means the
// harness could not run; the invariants that did not hold are in the
// report.
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
	for _, obj := range KueueShared() {
		if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, obj)); err != nil {
			return nil, fmt.Errorf("create Kueue's %T %s: %w", obj, obj.GetName(), err)
		}
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
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		r.sample(sampleCtx)
	}()
	defer func() {
		stopSampling()
		<-sampled
	}()

	slots := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	for _, w := range plan.Workloads {
		run := &WorkloadRun{Workload: w, Events: map[string]int{}, rulesAtSuccess: -1}
		for _, k := range plan.Kills {
			if k.Workload == w.Index {
				run.kills = append(run.kills, k)
			}
		}
		r.runs = append(r.runs, run)
		select {
		case <-ctx.Done():
			run.violate(InvariantHarness, "not started: %v", ctx.Err())
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
	return r.finish(ctx, stopSampling, sampled), nil
}

func startCache(ctx context.Context, env *framework.Env) (ctrlcache.Cache, error) {
	c, err := ctrlcache.New(env.Cluster.RESTConfig(), ctrlcache.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("harness cache: %w", err)
	}
	go func() { _ = c.Start(ctx) }()
	for _, obj := range []client.Object{&copsev1alpha1.PodCliqueSet{}, &corev1.Pod{}, &eventsv1.Event{},
		&trainerv1alpha1.TrainJob{}, &jobsetv1alpha2.JobSet{}, &kueue.Workload{}} {
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
	for _, inv := range AllInvariants {
		fmt.Fprintf(r.out, "[chaos] invariant %-9s %s\n", inv.Name, inv.Rule)
	}
	for _, w := range r.plan.Workloads {
		fmt.Fprintf(r.out, "[chaos]   %s %-14s %-30s %-40s %s; expect %s\n", w.Name, w.Feature, w.Variant, w.Shape(), w.History(), w.Expected)
	}
	for _, k := range r.plan.Kills {
		fmt.Fprintf(r.out, "[chaos]   kill %d: %s on w%02d, %s after it, down %s\n", k.Index, k.Trigger, k.Workload, k.Delay, k.Down)
	}
}

// follow adds a unit to those the sampler samples.
func (r *runner) follow(run *WorkloadRun, u unit, preemptor bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.followed {
		if f.unit == u {
			return
		}
	}
	r.followed = append(r.followed, &followed{unit: u, run: run, preemptor: preemptor})
}

// sample records, every sampleInterval until ctx ends, what each followed
// unit's state says for the run-wide invariants.
func (r *runner) sample(ctx context.Context) {
	ticker := time.NewTicker(sampleInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		r.mu.Lock()
		units := append([]*followed(nil), r.followed...)
		r.mu.Unlock()
		for _, f := range units {
			st, err := readUnit(ctx, r.cache, f.unit)
			if err != nil {
				continue
			}
			s := st.sample(f.unit, time.Now())
			r.mu.Lock()
			f.samples = append(f.samples, s)
			r.mu.Unlock()
		}
	}
}

// runWorkload creates the workload, watches it to its end while firing
// the kills aimed at it and taking its steps, and checks it.
func (r *runner) runWorkload(ctx context.Context, run *WorkloadRun) {
	timers := map[int]*time.Timer{}
	// A moment that never came (the workload ended first, or never
	// started) fires its kill at the end, so that every planned kill
	// happens; fire ignores kills already fired.
	fireRest := func() {
		for _, k := range run.kills {
			if timers[k.Index] == nil {
				r.killer.fire(k, fmt.Sprintf("%s moment not seen before the end", k.Trigger))
			}
		}
	}
	defer fireRest()

	created, err := r.create(ctx, run)
	if err != nil {
		run.violate(InvariantHarness, "%v", err)
		return
	}
	if !created {
		r.checkRefusal(run)
		return
	}
	fmt.Fprintf(r.out, "[chaos] %s %s created in namespace %s\n", clock(r.start, run.Created), run.Name, run.Namespace)
	if run.Expected.State == StateRefused {
		r.checkAccepted(ctx, run)
		return
	}
	for _, k := range run.kills {
		if k.Trigger == TriggerUniform {
			timers[k.Index] = time.AfterFunc(k.Delay, func() { r.killer.fire(k, "uniform") })
		}
	}

	ended := r.monitor(ctx, run)
	fireRest()
	if !ended {
		run.history.Stop()
		return
	}
	fmt.Fprintf(r.out, "[chaos] %s %s ended %s (expected %s) after %s\n", clock(r.start, run.Ended), run.Name,
		run.Observed, run.Expected, run.Ended.Sub(run.Created).Round(100*time.Millisecond))
	r.checkEnd(ctx, run)
	fmt.Fprintf(r.out, "[chaos] %s %s checked: %s, %d violation(s)\n", clock(r.start, time.Now()), run.Name, run.Observed, len(run.Violations))
}

// create makes the workload's namespace, its queue, binding and runtime,
// starts recording its pods and PodGroups, and creates its PodCliqueSet or
// TrainJob, retrying while the webhooks are down with the operator. It
// returns false when the API server refused the workload (Observed says
// why).
func (r *runner) create(ctx context.Context, run *WorkloadRun) (bool, error) {
	ns, err := framework.CreateNamespace(ctx, r.env.Client, "chaos-"+run.Name)
	if err != nil {
		return false, err
	}
	run.Namespace = ns
	run.unit = unit{Kind: run.Kind, Backend: run.Backend, Namespace: ns, Name: run.ObjectName, Queued: run.Queue != nil}
	var prerequisites []client.Object
	if run.Queue != nil {
		prerequisites = append(prerequisites, run.ClusterQueue(ns), LocalQueue(ns))
	}
	if run.Topology != nil && run.Topology.Change != TopologyUnresolved {
		if err := r.labelNodes(ctx, TopologyKey(ns)); err != nil {
			return false, err
		}
		prerequisites = append(prerequisites, Binding(BindingName(ns), TopologyKey(ns)))
	}
	if run.Kind == KindTrainJob {
		prerequisites = append(prerequisites, run.TrainingRuntime(ns))
	}
	for _, obj := range prerequisites {
		refused, err := r.createRetrying(ctx, obj)
		if err != nil {
			return false, err
		}
		if refused != nil {
			return false, fmt.Errorf("create %T %s: refused: %w", obj, obj.GetName(), refused)
		}
	}
	if run.history, err = framework.RecordHistory(ctx, r.env.Clientset, ns); err != nil {
		return false, err
	}
	var obj client.Object = run.PodCliqueSet(ns)
	if run.Kind == KindTrainJob {
		obj = run.TrainJob(ns)
	}
	refused, err := r.createRetrying(ctx, obj)
	if err != nil {
		run.history.Stop()
		return false, err
	}
	run.Created = time.Now()
	if refused != nil {
		run.Ended = run.Created
		run.history.Stop()
		run.Observed = End{State: StateRefused, Reason: refusedField(refused)}
		fmt.Fprintf(r.out, "[chaos] %s %s refused: %v\n", clock(r.start, run.Created), run.Name, refused)
		return false, nil
	}
	r.follow(run, run.unit, false)
	return true, nil
}

// acceptedWatch is how long the harness watches a workload the API server
// accepted although the oracle says it refuses it, to report what became
// of it.
const acceptedWatch = 20 * time.Second

// checkAccepted reports a workload the API server accepted although the
// oracle says it is refused, with what became of it.
func (r *runner) checkAccepted(ctx context.Context, run *WorkloadRun) {
	defer run.history.Stop()
	sleep(ctx, acceptedWatch)
	st, _ := readUnit(ctx, r.cache, run.unit)
	run.Ended = time.Now()
	run.Observed = End{State: StateAccepted, Reason: "created"}
	for _, line := range CheckEnd(run.Expected, run.Observed, true, 0, workloadDeadline) {
		run.violate(InvariantEnd, "%s; %s after its creation: %s", line, acceptedWatch, st.detail(run.unit))
	}
}

// checkRefusal checks a workload the API server refused against the
// oracle.
func (r *runner) checkRefusal(run *WorkloadRun) {
	for _, line := range CheckEnd(run.Expected, run.Observed, true, 0, workloadDeadline) {
		run.violate(InvariantEnd, "%s", line)
	}
}

// monitor follows the workload until it ends (or, when the oracle says it
// cannot progress, until a condition says why), checking that its status
// only moves forward, failing the victim pod of a tolerated failure,
// taking its steps and firing the kills whose moment comes. It returns
// false when the workload did not end.
func (r *runner) monitor(ctx context.Context, run *WorkloadRun) bool {
	deadline := run.Created.Add(workloadDeadline)
	ticker := time.NewTicker(monitorInterval)
	defer ticker.Stop()
	var last unitState
	for {
		select {
		case <-ctx.Done():
			run.violate(InvariantEnd, "stopped before the end: %v", ctx.Err())
			return false
		case <-ticker.C:
		}
		st, err := readUnit(ctx, r.cache, run.unit)
		if err == nil && st.exists(run.unit) {
			last = st
		}
		if time.Now().After(deadline) {
			for _, line := range CheckEnd(run.Expected, End{}, false, 0, workloadDeadline) {
				run.violate(InvariantEnd, "%s; %s", line, last.detail(run.unit))
			}
			return false
		}
		if err != nil || !st.exists(run.unit) {
			continue // not in the cache yet
		}
		run.observe(st)
		end, ended := st.terminal(run.unit)
		if run.Victim != nil && !ended {
			if run.InjectedPod == "" {
				r.injectFailure(ctx, run)
			} else {
				r.releaseAfterReplacement(ctx, run)
			}
		}
		r.advanceSteps(ctx, run, st)
		if !ended {
			r.release(ctx, run, st)
		}
		for _, k := range run.kills {
			if k.Trigger == TriggerUniform || k.Trigger == TriggerAction || r.killer.hasFired(k.Index) {
				continue
			}
			if cause := r.momentCame(run, st, k.Trigger); cause != "" {
				r.killer.fire(k, cause)
			}
		}
		if ended {
			run.Ended = time.Now()
			if run.Kind == KindTrainJob {
				end.RestartCount, end.Uncounted = run.backendRestarts, run.backendUncounted
			}
			run.Observed = end
			if run.Victim != nil && run.InjectedPod == "" {
				run.violate(InvariantHarness, "the tolerated failure was never injected: the workload never had all its pods ready")
			}
			if run.steps.next < len(run.Steps) {
				run.violate(InvariantHarness, "ended before its step %s", run.Steps[run.steps.next])
			}
			return true
		}
		if run.Expected.State == StateBlocked {
			if reason, ok := st.blockedBy(run.unit); ok {
				run.Ended = time.Now()
				run.Observed = End{State: StateBlocked, Reason: reason}
				return true
			}
		}
	}
}

// observe checks that the status moves only forward: no phase after a
// terminal one, no Running back to Pending but through a suspension,
// startTime set once (again only after a suspension), restartCount never
// lower and never above the budget, the Failed reason never changed, a
// TrainJob's terminal condition never changed; and keeps the restarts a
// TrainJob's backend reported last.
func (run *WorkloadRun) observe(st unitState) {
	if pcs := st.PCS; pcs != nil {
		if run.pcsUID != "" && pcs.UID != run.pcsUID {
			run.violate(InvariantStatus, "the PodCliqueSet was made again (uid %s, was %s) with restartCount %d", pcs.UID, run.pcsUID, pcs.Status.RestartCount)
			run.phase, run.startTime, run.suspendedSinceStart = "", nil, false
		}
		run.pcsUID = pcs.UID
		run.observePodCliqueSet(pcs)
	}
	if run.Kind != KindTrainJob {
		return
	}
	if restarts := st.backendRestarts(); restarts >= 0 {
		if restarts < run.backendRestarts {
			run.violate(InvariantStatus, "the backend's restarts went down from %d to %d", run.backendRestarts, restarts)
		}
		run.backendRestarts = restarts
		run.backendUncounted = st.backendUncounted()
	}
	if end, ok := st.terminal(run.unit); ok {
		end.RestartCount, end.Uncounted = 0, 0
		if run.trainJobEnd.State != "" && end != run.trainJobEnd {
			run.violate(InvariantStatus, "the TrainJob's end changed from %s to %s", run.trainJobEnd, end)
		}
		run.trainJobEnd = end
	} else if run.trainJobEnd.State != "" {
		run.violate(InvariantStatus, "the TrainJob left its end %s", run.trainJobEnd)
		run.trainJobEnd = End{}
	}
}

func (run *WorkloadRun) observePodCliqueSet(pcs *copsev1alpha1.PodCliqueSet) {
	st := pcs.Status
	if pcs.IsSuspended() || meta.IsStatusConditionTrue(st.Conditions, copsev1alpha1.ConditionTypeSuspended) {
		run.suspendedSinceStart = true
	}
	if st.Phase != run.phase {
		switch {
		case run.phase.IsTerminal():
			run.violate(InvariantStatus, "phase went from terminal %s to %s", run.phase, st.Phase)
		case run.phase == copsev1alpha1.PodCliqueSetPhaseRunning && st.Phase == copsev1alpha1.PodCliqueSetPhasePending && !run.suspendedSinceStart:
			run.violate(InvariantStatus, "phase went from Running back to Pending without a suspension")
		}
		run.phase = st.Phase
	}
	if !st.StartTime.Equal(run.startTime) {
		if run.startTime != nil && !run.suspendedSinceStart {
			run.violate(InvariantStatus, "startTime changed from %s to %v without a suspension", run.startTime.UTC().Format(time.RFC3339), st.StartTime)
		}
		run.startTime = st.StartTime.DeepCopy()
		if st.StartTime != nil {
			run.suspendedSinceStart = pcs.IsSuspended()
		}
	}
	if st.RestartCount < run.restartCount {
		run.violate(InvariantStatus, "restartCount went down from %d to %d", run.restartCount, st.RestartCount)
	}
	counted := st.RestartCount - st.UncountedRestarts
	if counted > run.MaxRestarts && st.RestartCount != run.restartCount {
		run.violate(InvariantStatus, "%d restarts counted towards maxRestarts %d (restartCount %d)", counted, run.MaxRestarts, st.RestartCount)
	}
	if st.RestartsCountTowardsMax != counted {
		run.violate(InvariantStatus, "restartsCountTowardsMax %d is not restartCount %d minus uncountedRestarts %d", st.RestartsCountTowardsMax, st.RestartCount, st.UncountedRestarts)
	}
	if maxUncounted := run.maxUncounted(); st.UncountedRestarts > maxUncounted || st.UncountedRestarts < run.uncounted {
		run.violate(InvariantStatus, "uncountedRestarts went from %d to %d (maxUncountedRestarts %d)", run.uncounted, st.UncountedRestarts, maxUncounted)
	}
	run.restartCount, run.uncounted = st.RestartCount, st.UncountedRestarts
	run.observeRulesAfterSuccess(pcs)
	if reason := failedReason(pcs); reason != run.failedReason {
		if run.failedReason != "" {
			run.violate(InvariantStatus, "the Failed reason changed from %s to %q", run.failedReason, reason)
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
		run.violate(InvariantHarness, "%v", err)
		run.InjectedPod = "impossible"
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
	run.InjectedPod = victim.Name
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
				p.Name != run.InjectedPod && p.Status.Phase == corev1.PodRunning {
				replaced = true
			}
		}
		if !replaced {
			return
		}
		run.Released = true
		fmt.Fprintf(r.out, "[chaos] %s %s: the replacement of %s runs; every pod told to exit 0\n", clock(r.start, time.Now()), run.Name, run.InjectedPod)
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
func (r *runner) momentCame(run *WorkloadRun, st unitState, trigger Trigger) string {
	pcs := st.PCS
	switch trigger {
	case TriggerRestart:
		if pcs == nil {
			return ""
		}
		for _, rec := range pcs.Status.ReplicaRecreations {
			if rec.CompletedAt == nil && rec.Reason == copsev1alpha1.RecreationReasonTrainingRestart {
				return fmt.Sprintf("restart of replica %d to attempt %d in progress", rec.ReplicaIndex, rec.Attempt)
			}
		}
		var events eventsv1.EventList
		if err := r.cache.List(context.Background(), &events, client.InNamespace(run.Namespace)); err == nil {
			for _, e := range events.Items {
				if e.Reason == "ReplicaRestarting" {
					return "ReplicaRestarting event seen"
				}
			}
		}
	case TriggerTerminating:
		if pcs == nil {
			return ""
		}
		if reason := failedReason(pcs); reason != "" && pcs.Status.Phase != copsev1alpha1.PodCliqueSetPhaseFailed {
			return fmt.Sprintf("Failed (%s), pods being terminated", reason)
		}
	case TriggerExit0:
		if _, ended := st.terminal(run.unit); ended {
			return ""
		}
		for _, p := range st.Pods {
			if p.Status.Phase == corev1.PodSucceeded {
				return "pod " + p.Name + " exited 0"
			}
		}
	}
	return ""
}
