package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copselabels "github.com/copse-dev/copse/internal/labels"
)

// `make bench-scale` (RunScale) runs many gangs at once on many simulated
// nodes: Training PodCliqueSets of mixed sizes that all run to Succeeded,
// next to Inference ones that stay up, and reports what that cost.

// Size limits of a scale Training workload, and the step sizes grow by.
const (
	scaleMinGang  = 64
	scaleMaxGang  = 512
	scaleGangStep = 32
	// scaleInferencePods is the size of one Inference workload.
	scaleInferencePods = 100
)

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	// Pods in all; a tenth of them (at least one workload's worth) go to
	// Inference workloads, the rest to Training ones.
	Pods int
	// Nodes is the number of simulated nodes (rounded up to whole racks of
	// ten).
	Nodes int
	// TrainingWorkloads is the number of Training PodCliqueSets; zero means
	// one per 100 pods.
	TrainingWorkloads int
	// Namespaces the workloads are spread over, round robin.
	Namespaces int
	// Seed makes the Training sizes reproducible.
	Seed uint64
	// RunDuration is how long each Training pod runs before it exits 0.
	RunDuration time.Duration
	// Timeout bounds the run, from the first create to the last workload
	// done.
	Timeout time.Duration
}

// SetDefaults fills zero fields: 10,000 pods on 1,000 nodes.
func (o *ScaleOptions) SetDefaults() {
	if o.Pods == 0 {
		o.Pods = 10000
	}
	if o.Nodes == 0 {
		o.Nodes = 1000
	}
	if o.TrainingWorkloads == 0 {
		o.TrainingWorkloads = max(o.Pods/100, 1)
	}
	if o.Namespaces == 0 {
		o.Namespaces = 10
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.RunDuration == 0 {
		o.RunDuration = 30 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
}

// ScaleTopology is a topology of at least nodes nodes: racks of ten nodes,
// ten racks to a block, in one zone.
func ScaleTopology(nodes int) cluster.Topology {
	t := cluster.DefaultTopology()
	t.Zones, t.NodesPerRack = 1, min(nodes, 10)
	racks := (nodes + t.NodesPerRack - 1) / t.NodesPerRack
	t.RacksPerBlock = min(racks, 10)
	t.BlocksPerZone = (racks + t.RacksPerBlock - 1) / t.RacksPerBlock
	return t
}

// scaleWorkload is one PodCliqueSet of the scale run.
type scaleWorkload struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Training  bool   `json:"training"`
	Pods      int    `json:"pods"`
}

// planScale splits pods into trainingCount Training workloads of
// scaleMinGang to scaleMaxGang pods (a tenth of pods, at least one Inference
// workload's worth, goes to Inference workloads of about
// scaleInferencePods), spread round robin over namespaces. Every Training
// workload starts at scaleMinGang; seeded random ones then grow to 128, 256
// or 512 pods (the smaller the likelier, as in a real mix) while the pods
// last, and what is left over is handed out in small steps, so that the
// total is exact.
func planScale(pods, trainingCount int, namespaces []string, seed uint64) ([]scaleWorkload, error) {
	inferencePods := max(pods/10, min(scaleInferencePods, pods))
	trainingPods := pods - inferencePods
	if trainingCount < 1 || trainingPods < trainingCount*scaleMinGang || trainingPods > trainingCount*scaleMaxGang {
		return nil, fmt.Errorf("scale: %d Training pods do not fit %d Training workloads of %d to %d pods: change --scale-pods or --scale-training",
			trainingPods, trainingCount, scaleMinGang, scaleMaxGang)
	}
	if len(namespaces) == 0 {
		return nil, errors.New("scale: no namespace")
	}
	sizes := make([]int, trainingCount)
	for i := range sizes {
		sizes[i] = scaleMinGang
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	left := trainingPods - trainingCount*scaleMinGang
	// Targets with weights 4:2:1.
	targets := []int{128, 128, 128, 128, 256, 256, scaleMaxGang}
	for _, i := range rng.Perm(trainingCount) {
		grow := targets[rng.IntN(len(targets))] - scaleMinGang
		for grow > left && grow > scaleMinGang {
			grow /= 2 // a smaller target that still fits
		}
		if grow > left {
			break
		}
		sizes[i] += grow
		left -= grow
	}
	for left > 0 {
		i := rng.IntN(trainingCount)
		step := min(scaleGangStep, left, scaleMaxGang-sizes[i])
		sizes[i] += step
		left -= step
	}
	var plan []scaleWorkload
	for i, n := range sizes {
		plan = append(plan, scaleWorkload{Name: fmt.Sprintf("train-%03d", i), Training: true, Pods: n})
	}
	inference := (inferencePods + scaleInferencePods - 1) / scaleInferencePods
	for i := range inference {
		// Even shares, the first ones one pod larger.
		n := inferencePods / inference
		if i < inferencePods%inference {
			n++
		}
		plan = append(plan, scaleWorkload{Name: fmt.Sprintf("serve-%03d", i), Pods: n})
	}
	for i := range plan {
		plan[i].Namespace = namespaces[i%len(namespaces)]
	}
	return plan, nil
}

// Scale measurement names (Run.Seconds keys).
const (
	MeasureScaleAllCreated   = "allPodsCreated"
	MeasureScaleAllScheduled = "allPodsScheduled"
	MeasureScaleAllDone      = "allWorkloadsDone"
	// MeasureScaleGangSpread is the largest time between the first and the
	// last pod of one PodClique seen bound to a node.
	MeasureScaleGangSpread = "largestGangBindingSpread"
)

// ScaleReport is the scale run's own record, next to the table.
type ScaleReport struct {
	Options   ScaleOptions    `json:"options"`
	Workloads []scaleWorkload `json:"workloads"`
	// PodGroups is the number of PodGroups the scheduler backend created.
	PodGroups int `json:"podGroups"`
	// WorkloadsDone counts the workloads done when the run ended.
	WorkloadsDone int `json:"workloadsDone"`
}

var podGroupGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}

// RunScale creates every workload of the plan at once, waits until every
// Training one has Succeeded and every Inference one is available, and
// reports the time, the operator's CPU and memory, its reconcile errors
// (the run fails unless there are none) and the API requests per pod.
func (b *Bench) RunScale(ctx context.Context, so ScaleOptions) *Results {
	so.SetDefaults()
	run := Run{Scenario: ScenarioScale, System: SystemCopse, Size: so.Pods, Repetition: 1, Seconds: map[string]float64{}, started: time.Now()}
	report := &ScaleReport{Options: so}
	err := b.runScale(ctx, so, &run, report)
	run = b.record(run, err)

	res := &Results{Meta: b.meta, Runs: b.runs, Scale: report}
	res.Meta.DurationSeconds = time.Since(b.started).Seconds()
	res.Meta.LoadAverageEnd = loadAverage()
	res.Meta.Options.Scenarios = []string{ScenarioScale}
	res.Meta.Options.Repetitions = 1
	if run.Error != "" {
		res.Errors = append(res.Errors, "scale: "+run.Error)
	}
	if run.ReconcileErrors != nil && *run.ReconcileErrors != 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("scale: the operator counted %g reconcile errors (controller_runtime_reconcile_errors_total); there must be none", *run.ReconcileErrors))
	}
	res.Rows, res.Notes = scaleRows(run, report, b.meta)
	return res
}

func (b *Bench) runScale(ctx context.Context, so ScaleOptions, run *Run, report *ScaleReport) error {
	var namespaces []string
	for i := range so.Namespaces {
		ns, err := b.namespace(ctx, fmt.Sprintf("bench-scale-%d", i))
		if err != nil {
			return err
		}
		namespaces = append(namespaces, ns)
	}
	plan, err := planScale(so.Pods, so.TrainingWorkloads, namespaces, so.Seed)
	if err != nil {
		return err
	}
	report.Workloads = plan
	b.logf("scale: %d workloads (%d pods) on %d nodes", len(plan), so.Pods, b.meta.Nodes)

	ctx, cancel := context.WithTimeout(ctx, so.Timeout)
	defer cancel()
	// Ten thousand pods change state about five times each: the pod watch
	// uses protobuf, which costs this process and the API server far less
	// than JSON.
	cfg := rest.CopyConfig(b.env.Cluster.RESTConfig())
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	protoClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods, err := trackPods(ctx, protoClient, metav1.NamespaceAll)
	if err != nil {
		return err
	}
	workloads, err := trackObjects(ctx, b.dyn, pcsGVR, metav1.NamespaceAll)
	if err != nil {
		return err
	}
	cost, err := b.startOperatorCost(ctx)
	if err != nil {
		return err
	}

	t0 := time.Now()
	if err := b.createScaleWorkloads(ctx, plan, so.RunDuration); err != nil {
		return err
	}
	b.logf("scale: created %d PodCliqueSets in %s", len(plan), time.Since(t0).Round(time.Millisecond))
	waitErr := waitScale(ctx, plan, pods, workloads, func(detail string) {
		b.logf("scale: %s (%s)", detail, time.Since(t0).Round(time.Second))
	})
	// What was reached is reported even when not everything was.
	records := pods.Pods(klabels.Everything())
	if at := nthTime(field(records, added), so.Pods); !at.IsZero() {
		run.Seconds[MeasureScaleAllCreated] = at.Sub(t0).Seconds()
	}
	if at := nthTime(field(records, scheduled), so.Pods); !at.IsZero() {
		run.Seconds[MeasureScaleAllScheduled] = at.Sub(t0).Seconds()
	}
	if waitErr == nil {
		run.Seconds[MeasureScaleAllDone] = latestDone(plan, workloads).Sub(t0).Seconds()
		b.logf("scale: every workload done after %s", time.Since(t0).Round(time.Second))
	}
	run.Seconds[MeasureScaleGangSpread] = largestGangSpread(records).Seconds()
	report.WorkloadsDone, _ = scaleProgress(plan, workloads)
	// A fresh context: the run's may have expired.
	finishCtx, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancelFinish()
	groups, err := b.dyn.Resource(podGroupGVR).Namespace(metav1.NamespaceAll).List(finishCtx, metav1.ListOptions{})
	if err != nil {
		return errors.Join(waitErr, fmt.Errorf("scale: list PodGroups: %w", err))
	}
	report.PodGroups = len(groups.Items)
	run.Objects = objectCounts(workloads)
	if err := cost.finish(finishCtx, run, so.Pods); err != nil {
		return errors.Join(waitErr, err)
	}
	if waitErr == nil && len(records) != so.Pods {
		return fmt.Errorf("scale: %d pods were created, want %d", len(records), so.Pods)
	}
	return waitErr
}

// scaleProgressInterval is how often waitScale checks the workloads, and
// scaleLogInterval how often it reports progress.
const (
	scaleProgressInterval = 500 * time.Millisecond
	scaleLogInterval      = 30 * time.Second
)

// waitScale waits until every planned workload is done, fails as soon as a
// Training one has failed, and reports progress through logf. The pods are
// counted only for the progress line: ten thousand records are too many to
// copy twice a second.
func waitScale(ctx context.Context, plan []scaleWorkload, pods *podTracker, workloads *objTracker, logf func(string)) error {
	start := time.Now()
	progress := func() string {
		records := pods.Pods(klabels.Everything())
		done, _ := scaleProgress(plan, workloads)
		return fmt.Sprintf("%d of %d workloads done; %d pods seen, %d bound, %d Running seen, %d Succeeded seen", done, len(plan),
			len(records), countSet(field(records, scheduled)), countSet(field(records, running)), countSet(field(records, succeeded)))
	}
	ticker := time.NewTicker(scaleProgressInterval)
	defer ticker.Stop()
	lastLog := start
	for {
		if err := errors.Join(pods.Err(), workloads.Err()); err != nil {
			return err
		}
		done, failed := scaleProgress(plan, workloads)
		if len(failed) > 0 {
			return fmt.Errorf("scale: Training workloads failed: %v", failed)
		}
		if done == len(plan) {
			return nil
		}
		if time.Since(lastLog) >= scaleLogInterval {
			logf(progress())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scale: not every Training workload Succeeded and every Inference one available: %w after %s (%s)",
				ctx.Err(), time.Since(start).Round(time.Second), progress())
		case <-ticker.C:
		}
	}
}

// createScaleWorkloads creates the plan's PodCliqueSets, eight at a time.
func (b *Bench) createScaleWorkloads(ctx context.Context, plan []scaleWorkload, runFor time.Duration) error {
	work := make(chan scaleWorkload)
	errs := make(chan error, len(plan))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for w := range work {
				if err := b.env.Client.Create(ctx, scalePCS(w, runFor)); err != nil {
					errs <- fmt.Errorf("create PodCliqueSet %s/%s: %w", w.Namespace, w.Name, err)
				}
			}
		})
	}
	for _, w := range plan {
		work <- w
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs // nil once closed and empty
}

// scalePCS is the PodCliqueSet of one planned workload: one replica, one
// clique. Training pods run for runFor and exit 0.
func scalePCS(w scaleWorkload, runFor time.Duration) *copsev1alpha1.PodCliqueSet {
	if !w.Training {
		return framework.NewPodCliqueSet(w.Namespace, w.Name, 1, framework.CliqueTemplate("server", int32(w.Pods), framework.PodSpec(0)))
	}
	return trainingPCS(w.Namespace, w.Name, int32(w.Pods), 0,
		map[string]string{cluster.AnnotationRunDuration: runFor.String(), cluster.AnnotationExitCode: "0"}, false)
}

// scaleProgress counts the workloads done (Training: phase Succeeded;
// Inference: available) and names those that failed.
func scaleProgress(plan []scaleWorkload, workloads *objTracker) (done int, failed []string) {
	for _, w := range plan {
		r, ok := workloads.ObjectIn(w.Namespace, w.Name)
		switch {
		case !ok:
		case w.Training && !r.Phases[string(copsev1alpha1.PodCliqueSetPhaseFailed)].IsZero():
			failed = append(failed, w.Namespace+"/"+w.Name)
		case w.Training && !r.Phases[string(copsev1alpha1.PodCliqueSetPhaseSucceeded)].IsZero():
			done++
		case !w.Training && !r.Available.IsZero():
			done++
		}
	}
	return done, failed
}

// latestDone is when the last workload was seen done.
func latestDone(plan []scaleWorkload, workloads *objTracker) time.Time {
	var last time.Time
	for _, w := range plan {
		r, _ := workloads.ObjectIn(w.Namespace, w.Name)
		at := r.Available
		if w.Training {
			at = r.Phases[string(copsev1alpha1.PodCliqueSetPhaseSucceeded)]
		}
		if at.After(last) {
			last = at
		}
	}
	return last
}

func scheduled(r podRecord) time.Time { return r.Scheduled }
func succeeded(r podRecord) time.Time { return r.Succeeded }

// podCliqueLabel names a pod's PodClique.
const podCliqueLabel = copselabels.PodCliqueKey

func sumValues(m map[string]float64) float64 {
	var sum float64
	for _, v := range m {
		sum += v
	}
	return sum
}

// largestGangSpread is, over the PodCliques, the largest time between the
// first and the last of its pods seen bound to a node: gang scheduling binds
// a gang's pods together.
func largestGangSpread(records []podRecord) time.Duration {
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, r := range records {
		clique := r.Labels[podCliqueLabel]
		if r.Scheduled.IsZero() || clique == "" {
			continue
		}
		key := r.Namespace + "/" + clique
		if f, ok := first[key]; !ok || r.Scheduled.Before(f) {
			first[key] = r.Scheduled
		}
		if r.Scheduled.After(last[key]) {
			last[key] = r.Scheduled
		}
	}
	var spread time.Duration
	for key, f := range first {
		spread = max(spread, last[key].Sub(f))
	}
	return spread
}

// scaleRows is the scale run's table: one value per row, no reference.
func scaleRows(run Run, report *ScaleReport, meta Meta) ([]Row, []string) {
	var training, inference []float64
	for _, w := range report.Workloads {
		if w.Training {
			training = append(training, float64(w.Pods))
		} else {
			inference = append(inference, float64(w.Pods))
		}
	}
	one := func(section, name, unit string, v float64, ok bool, note string) Row {
		if !ok {
			return row(section, name, unit, nil, "", nil, note)
		}
		return row(section, name, unit, []float64{v}, "", nil, note)
	}
	sec := func(name string) (float64, bool) { v, ok := run.Seconds[name]; return v, ok }
	so := report.Options
	rows := []Row{
		row("load", fmt.Sprintf("Training PodCliqueSet sizes (%d workloads, seed %d)", len(training), so.Seed), "pods", training, "", nil, "min / median / max"),
		row("load", fmt.Sprintf("Inference PodCliqueSet sizes (%d workloads)", len(inference)), "pods", inference, "", nil, ""),
		one("load", "pods in all", "pods", float64(so.Pods), true, ""),
		one("load", "simulated nodes", "nodes", float64(meta.Nodes), true, ""),
		one("load", "PodGroups created (gang scheduling)", "groups", float64(report.PodGroups), true, ""),
	}
	v, ok := sec(MeasureScaleAllCreated)
	rows = append(rows, one("time", "create -> every pod created", "s", v, ok, ""))
	v, ok = sec(MeasureScaleAllScheduled)
	rows = append(rows, one("time", "create -> every pod bound to a node", "s", v, ok, ""))
	v, ok = sec(MeasureScaleAllDone)
	rows = append(rows, one("time", "create -> every Training workload Succeeded, every Inference one available (wall time)", "s", v, ok,
		fmt.Sprintf("Training pods run %s", so.RunDuration)))
	rows = append(rows, one("time", "workloads done at the end", "workloads", float64(report.WorkloadsDone), true, fmt.Sprintf("of %d", len(report.Workloads))))
	v, ok = sec(MeasureScaleGangSpread)
	rows = append(rows, one("time", "largest first-to-last binding time of one gang", "s", v, ok, ""))
	if run.Process != nil {
		rows = append(rows,
			one("operator", "operator CPU", "s", run.Process.CPUSeconds, true, ""),
			one("operator", "operator peak RSS", "MiB", float64(run.Process.PeakRSSBytes)/(1<<20), true, ""))
	}
	if run.ReconcileErrors != nil {
		rows = append(rows, one("operator", "reconcile errors", "errors", *run.ReconcileErrors, true, "controller_runtime_reconcile_errors_total; must be 0"))
	}
	for _, controller := range slices.Sorted(maps.Keys(run.Reconciles)) {
		c := run.Reconciles[controller]
		rows = append(rows,
			one("operator", fmt.Sprintf("  %s: reconciles per pod", controller), "reconciles", c.Reconciles/float64(so.Pods), true, ""),
			one("operator", fmt.Sprintf("  %s: time in Reconcile", controller), "s", c.Seconds, true, "wall time summed over workers"))
	}
	pods := float64(so.Pods)
	if run.APIServer != nil {
		rows = append(rows, one("api", "API requests per pod, all clients (API server)", "requests", run.APIServer.Requests/pods, true, "apiserver_request_total"))
		for _, fs := range slices.Sorted(maps.Keys(run.APIServer.ByFlowSchema)) {
			rows = append(rows, one("api", "  dispatched per pod, FlowSchema "+fs, "requests", run.APIServer.ByFlowSchema[fs]/pods, true, ""))
		}
		rows = append(rows, one("api", "409 conflicts on grove.io objects (API server)", "requests", run.APIServer.Conflicts(), true, ""))
		if n := run.Objects["PodCliqueSet"]; n > 0 {
			rows = append(rows, one("api", "status write requests per PodCliqueSet (API server)", "requests", run.APIServer.StatusWrites["podcliquesets"]/float64(n), true, ""))
			rows = append(rows, one("api", "status write requests per PodClique (API server)", "requests", run.APIServer.StatusWrites["podcliques"]/float64(n), true, "one PodClique per PodCliqueSet"))
		}
	}
	if run.Writes != nil {
		rows = append(rows,
			one("api", "operator requests per pod (its client)", "requests", sumValues(run.Writes.ByMethod)/pods, true, "rest_client_requests_total"),
			one("api", "operator writes per pod (its client)", "writes", run.Writes.WritesPerPod, true, ""))
	}
	notes := []string{
		fmt.Sprintf("copse runs with its default client settings (qps %g, burst %d, %s) as %s", meta.OperatorQPS, meta.OperatorBurst, meta.OperatorConcurrency, meta.OperatorIdentity),
		"API requests by FlowSchema tell the clients apart: copse-operator is copse, exempt is system:masters (kwok, this benchmark), kube-scheduler, kube-controller-manager and kube-system-service-accounts the control plane",
	}
	return rows, notes
}
