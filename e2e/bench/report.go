package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// ResultsFile is the name of the JSON file WriteJSON writes.
const ResultsFile = "bench-results.json"

// Run runs every scenario Repetitions times, interleaved: each repetition
// runs each scenario's copse run and reference run back to back, in
// alternating order, so that a slow minute of the machine hits both. The
// queued-start scenario's repetitions come after the others' (see
// startKueue). A
// warm-up copse creation run comes first; it is recorded with repetition 0
// and left out of the summaries. Runs that fail are recorded with their
// error and the benchmark goes on.
func (b *Bench) Run(ctx context.Context) *Results {
	o := b.opts
	pair := func(rep int, copse, reference func()) {
		if rep%2 == 1 {
			copse()
			reference()
		} else {
			reference()
			copse()
		}
	}
	if o.has(ScenarioCreation) {
		b.logf("warm-up: creation of %d pods", o.Sizes[0])
		b.creationCopse(ctx, 0, o.Sizes[0])
	}
	for rep := 1; rep <= o.Repetitions && ctx.Err() == nil; rep++ {
		b.logf("repetition %d of %d", rep, o.Repetitions)
		if o.has(ScenarioCreation) {
			for _, n := range o.Sizes {
				pair(rep, func() { b.creationCopse(ctx, rep, n) }, func() { b.creationReferences(ctx, rep, n) })
			}
		}
		if o.has(ScenarioRestart) {
			n := o.RestartPods
			pair(rep, func() { b.restartCopse(ctx, rep, n) }, func() { b.restartJobSet(ctx, rep, n) })
		}
		if o.has(ScenarioRestartInPlace) {
			// The references are the restart scenario's runs (JobSet's
			// Recreate, copse's recreation) of the same repetition.
			b.restartCopseInPlace(ctx, rep, o.RestartPods)
		}
		if o.has(ScenarioCompletion) {
			n := o.CompletionPods
			pair(rep, func() { b.completionCopse(ctx, rep, n) }, func() { b.completionJobSet(ctx, rep, n) })
		}
		if o.has(ScenarioTrainJobRestart) {
			n := o.RestartPods
			pair(rep, func() { b.restartTrainJob(ctx, rep, n, trainerv1alpha1.RuntimeBackendPodCliqueSet) },
				func() { b.restartTrainJob(ctx, rep, n, trainerv1alpha1.RuntimeBackendJobSet) })
		}
		if o.has(ScenarioContention) {
			n := o.ContentionPods
			pair(rep, func() { b.contentionCopse(ctx, rep, n) }, func() {
				b.contentionIdle(ctx, rep, n)
				b.contentionAPILimit(ctx, rep, n)
			})
		}
	}
	// Last: it starts Kueue, whose webhooks the other scenarios' jobs would
	// go through.
	if o.has(ScenarioQueuedStart) && ctx.Err() == nil {
		b.runQueuedStart(ctx, pair)
	}
	return b.report(ctx)
}

// Results is the outcome of a benchmark: the summary rows, every run, and
// the errors of the runs that failed.
type Results struct {
	Meta   Meta     `json:"meta"`
	Rows   []Row    `json:"rows"`
	Notes  []string `json:"notes"`
	Runs   []Run    `json:"runs"`
	Errors []string `json:"errors,omitempty"`
	// Scale is the plan of `make bench-scale` (RunScale).
	Scale *ScaleReport `json:"scale,omitempty"`
}

// Row is one figure: copse's spread over the repetitions, the reference's,
// and the spread of copse/reference paired by repetition.
type Row struct {
	Section       string   `json:"section"`
	Name          string   `json:"name"`
	Unit          string   `json:"unit"`
	Copse         Summary  `json:"copse"`
	ReferenceName string   `json:"referenceName,omitempty"`
	Reference     *Summary `json:"reference,omitempty"`
	Ratio         *Summary `json:"ratio,omitempty"`
	Note          string   `json:"note,omitempty"`
}

// Failed reports whether some run could not be carried out.
func (r *Results) Failed() bool { return len(r.Errors) > 0 }

// series is one value per repetition (NaN where the run failed or has no
// such value), so that two series pair up by repetition.
func (b *Bench) series(scenario, system string, size int, get func(Run) (float64, bool)) []float64 {
	values, _ := b.bestSeries(scenario, system, size, seconds(MeasureAllPodsCreated), get)
	return values
}

// bestSeries is series for a system run several times per repetition (the
// API-limit client, once per parallelism): per repetition, get of the run
// with the lowest rank, and that run's parallelism. With one run per
// repetition it is plain series.
func (b *Bench) bestSeries(scenario, system string, size int, rank, get func(Run) (float64, bool)) ([]float64, []int) {
	values := make([]float64, b.opts.Repetitions)
	best := make([]float64, b.opts.Repetitions)
	parallelism := make([]int, b.opts.Repetitions)
	for i := range values {
		values[i], best[i] = math.NaN(), math.Inf(1)
	}
	for _, r := range b.runs {
		if r.Scenario != scenario || r.System != system || r.Size != size || r.Repetition < 1 ||
			r.Repetition > len(values) || r.Error != "" {
			continue
		}
		i := r.Repetition - 1
		score, ok := rank(r)
		if !ok {
			score = math.MaxFloat64 // still eligible when no run has a rank
		}
		if score >= best[i] {
			continue
		}
		if v, ok := get(r); ok {
			values[i], best[i], parallelism[i] = v, score, r.Parallelism
		}
	}
	return values, parallelism
}

func seconds(name string) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) { v, ok := r.Seconds[name]; return v, ok }
}

func writesPerPod(r Run) (float64, bool) {
	if r.Writes == nil {
		return 0, false
	}
	return r.Writes.WritesPerPod, true
}

func conflicts(r Run) (float64, bool) {
	if r.Writes == nil {
		return 0, false
	}
	return r.Writes.Conflicts, true
}

func statusWritesOf(kind string) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) { v, ok := r.StatusWrites[kind]; return float64(v), ok }
}

func cpuSeconds(r Run) (float64, bool) {
	if r.Process == nil {
		return 0, false
	}
	return r.Process.CPUSeconds, true
}

func peakRSSMiB(r Run) (float64, bool) {
	if r.Process == nil {
		return 0, false
	}
	return float64(r.Process.PeakRSSBytes) / (1 << 20), true
}

// row builds a row from copse's series and, if refSystem is set, the
// reference's.
func row(section, name, unit string, copse []float64, refName string, ref []float64, note string) Row {
	r := Row{Section: section, Name: name, Unit: unit, Copse: Summarize(copse), Note: note}
	if refName != "" {
		s := Summarize(ref)
		r.ReferenceName, r.Reference = refName, &s
		if !s.Empty() {
			ratio := Summarize(PairedRatios(copse, ref))
			r.Ratio = &ratio
		}
	}
	return r
}

func perPodMillis(n int, get func(Run) (float64, bool)) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		v, ok := get(r)
		return v * 1000 / float64(n), ok
	}
}

func apiConflicts(r Run) (float64, bool) {
	if r.APIServer == nil {
		return 0, false
	}
	return r.APIServer.Conflicts(), true
}

// statusRequestsPer is the API server's count of status write requests on
// resource, per object of kind the run's watches saw.
func statusRequestsPer(resource, kind string) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		if r.APIServer == nil || r.Objects[kind] == 0 {
			return 0, false
		}
		return r.APIServer.StatusWrites[resource] / float64(r.Objects[kind]), true
	}
}

// statusChangesPer is the status changes the watches saw on kind, per
// object.
func statusChangesPer(kind string) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		v, ok := r.StatusWrites[kind]
		if !ok || r.Objects[kind] == 0 {
			return float64(v), ok
		}
		return float64(v) / float64(r.Objects[kind]), true
	}
}

func reconciles(controller string) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		c, ok := r.Reconciles[controller]
		return c.Reconciles, ok
	}
}

// controllers names the operator's controllers that reconciled in copse's
// runs of scenario.
func (b *Bench) controllers(scenario string) []string {
	seen := map[string]bool{}
	for _, r := range b.runs {
		if r.Scenario == scenario && r.System == SystemCopse {
			for c := range r.Reconciles {
				seen[c] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func latency(get func(*ObserverLatency) float64) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		if r.Latency == nil {
			return 0, false
		}
		return get(r.Latency), true
	}
}

func levelCost(level string, get func(PriorityLevelCost) float64) func(Run) (float64, bool) {
	return func(r Run) (float64, bool) {
		if r.FlowControl == nil {
			return 0, false
		}
		return get(r.FlowControl[level]), true
	}
}

// GrowthExponent is k of time = c * N^k, fitted by least squares to the
// logarithms of the points (sizes[i], times[i]) that have a positive time;
// NaN with fewer than two such points.
func GrowthExponent(sizes []int, times []float64) float64 {
	var xs, ys []float64
	for i, n := range sizes {
		if i < len(times) && !math.IsNaN(times[i]) && times[i] > 0 && n > 0 {
			xs, ys = append(xs, math.Log(float64(n))), append(ys, math.Log(times[i]))
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

// growthSeries is, per repetition, GrowthExponent over the sizes.
func growthSeries(sizes []int, bySize [][]float64, reps int) []float64 {
	out := make([]float64, reps)
	for rep := range out {
		times := make([]float64, len(sizes))
		for i := range sizes {
			times[i] = bySize[i][rep]
		}
		out[rep] = GrowthExponent(sizes, times)
	}
	return out
}

// bestParallelismNote says which parallelism of the API-limit client was
// fastest in how many repetitions, and each one's median time.
func (b *Bench) bestParallelismNote(n int, best []int) string {
	wins := map[int]int{}
	for _, p := range best {
		if p > 0 {
			wins[p]++
		}
	}
	var parts []string
	for _, p := range b.opts.ReferenceParallelism {
		var times []float64
		for _, r := range b.runs {
			if r.Scenario == ScenarioCreation && r.System == SystemAPILimit && r.Size == n && r.Parallelism == p && r.Repetition >= 1 && r.Error == "" {
				times = append(times, r.Seconds[MeasureAllPodsCreated])
			}
		}
		parts = append(parts, fmt.Sprintf("%d creators: median %.3f s, fastest in %d of %d", p, Summarize(times).Median, wins[p], b.opts.Repetitions))
	}
	return fmt.Sprintf("API server limit at N=%d: %s", n, strings.Join(parts, "; "))
}

// conflictAndStatusRows are a copse scenario's optimistic-lock conflicts
// (the operator's client metric, and, with apiConflicts, the API server's
// for grove.io objects) and its status write requests per object (the API
// server's metric); what names the runs in the row names.
func (b *Bench) conflictAndStatusRows(section, scenario, what string, n int, withAPIConflicts bool) []Row {
	series := func(get func(Run) (float64, bool)) []float64 { return b.series(scenario, SystemCopse, n, get) }
	rows := []Row{row(section, fmt.Sprintf("409 conflicts, %s (operator's client, all requests)", what), "requests", series(conflicts), "", nil, "")}
	if withAPIConflicts {
		rows = append(rows, row(section, fmt.Sprintf("409 conflicts, %s (API server, grove.io objects)", what), "requests", series(apiConflicts), "", nil, ""))
	}
	for _, kind := range []struct{ resource, kind string }{{"podcliquesets", "PodCliqueSet"}, {"podcliques", "PodClique"}} {
		rows = append(rows, row(section, fmt.Sprintf("status write requests per %s, %s (API server)", kind.kind, what), "requests",
			series(statusRequestsPer(kind.resource, kind.kind)), "", nil, ""))
	}
	return rows
}

func (b *Bench) report(ctx context.Context) *Results {
	o := b.opts
	b.meta.DurationSeconds = time.Since(b.started).Seconds()
	b.meta.LoadAverageEnd = loadAverage()
	b.meta.Options.Sizes, b.meta.Options.Repetitions = o.Sizes, o.Repetitions
	b.meta.Options.RestartPods, b.meta.Options.CompletionPods = o.RestartPods, o.CompletionPods
	b.meta.Options.CompletionRunDuration = o.CompletionRunDuration.String()
	b.meta.Options.ReferenceParallelism, b.meta.Options.Scenarios = o.ReferenceParallelism, o.Scenarios
	b.meta.Options.ContentionPods, b.meta.Options.ObserverInterval = o.ContentionPods, o.ObserverInterval.String()
	b.meta.Options.ContentionParallelism = o.ContentionParallelism
	if o.has(ScenarioQueuedStart) {
		b.meta.Options.QueuedWorkloads, b.meta.Options.QueuedNodes = o.QueuedWorkloads, o.QueuedNodes
	}
	rep := &Results{Meta: b.meta, Runs: b.runs}
	for _, r := range b.runs {
		if r.Error != "" {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s %s n=%d repetition %d: %s", r.Scenario, r.System, r.Size, r.Repetition, r.Error))
		}
	}
	if ctx.Err() != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("benchmark interrupted: %v", ctx.Err()))
	}

	const timeSec, apfSec, apiSec, opSec = "time", "apf", "api", "operator"
	apiLimit := "API server limit"
	sameQPS := "same-QPS client"
	jobset := "JobSet"
	rep.Notes = []string{
		"times come from this process's clock on watch events (millisecond precision); rows 'from finishedAt' start at a whole-second timestamp instead, so they read up to 1 s more",
		fmt.Sprintf("copse runs with its default client settings (qps %g, burst %d, %s) as %s, with the chart's API Priority and Fairness objects %s",
			b.qps, b.burst, b.meta.OperatorConcurrency, b.meta.OperatorIdentity, map[bool]string{true: "installed", false: "left out (flowControl.enabled=false)"}[b.meta.FlowControl]),
	}
	var rows []Row
	add := func(r Row) { rows = append(rows, r) }
	if o.has(ScenarioCreation) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("API server limit: copies of copse's pod (scheduling-gated, like copse's) created with copse's identity and no client-side rate limit by %v concurrent creators, each in every repetition; the fastest of each repetition is the reference", o.ReferenceParallelism))
		switch {
		case b.sameQPSReference():
			rep.Notes = append(rep.Notes, fmt.Sprintf("same-QPS client (secondary): the same pods created through client-go's token bucket at copse's qps %g / burst %d, %d creates in flight", b.qps, b.burst, sameQPSParallelism))
		case !o.WithoutSameQPSReference:
			rep.Notes = append(rep.Notes, "no same-QPS client row: copse has no client-side rate limit, so that client would be the API-limit client")
		}
		var copseBySize, limitBySize [][]float64
		for _, n := range o.Sizes {
			copse := b.series(ScenarioCreation, SystemCopse, n, seconds(MeasureAllPodsCreated))
			limit, best := b.bestSeries(ScenarioCreation, SystemAPILimit, n, seconds(MeasureAllPodsCreated), seconds(MeasureAllPodsCreated))
			copseBySize, limitBySize = append(copseBySize, copse), append(limitBySize, limit)
			add(row(timeSec, fmt.Sprintf("creation N=%d: create -> N-th pod", n), "s", copse, apiLimit, limit, ""))
			copsePerPod := b.series(ScenarioCreation, SystemCopse, n, perPodMillis(n, seconds(MeasureAllPodsCreated)))
			limitPerPod, _ := b.bestSeries(ScenarioCreation, SystemAPILimit, n, seconds(MeasureAllPodsCreated), perPodMillis(n, seconds(MeasureAllPodsCreated)))
			add(row(timeSec, fmt.Sprintf("  per pod, N=%d", n), "ms/pod", copsePerPod, apiLimit, limitPerPod, ""))
			if b.sameQPSReference() {
				add(row(timeSec, fmt.Sprintf("  N=%d against the same-QPS client (secondary)", n), "s", copse, sameQPS,
					b.series(ScenarioCreation, SystemSameQPSClient, n, seconds(MeasureAllPodsCreated)), ""))
			}
			rep.Notes = append(rep.Notes, b.bestParallelismNote(n, best))
		}
		if len(o.Sizes) > 1 {
			add(row(timeSec, fmt.Sprintf("creation growth: k in time ~ N^k, N=%d..%d", slices.Min(o.Sizes), slices.Max(o.Sizes)), "k",
				growthSeries(o.Sizes, copseBySize, o.Repetitions), apiLimit, growthSeries(o.Sizes, limitBySize, o.Repetitions), "least-squares fit of log time over log N, per repetition"))
		}
	}
	if o.has(ScenarioRestart) || o.has(ScenarioCompletion) || o.has(ScenarioTrainJobRestart) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("JobSet: sigs.k8s.io/jobset %s controller at copse's qps/burst; the pods of its Jobs are created and deleted by kube-controller-manager (client qps 20 / burst 30, Kubernetes' defaults), whose CPU is not in the JobSet controller's", b.meta.JobSetVersion))
	}
	if o.has(ScenarioRestart) {
		n := o.RestartPods
		add(row(timeSec, fmt.Sprintf("restart %d: failure -> all replacements created", n), "s",
			b.series(ScenarioRestart, SystemCopse, n, seconds(MeasureReplacementsCreated)), jobset,
			b.series(ScenarioRestart, SystemJobSet, n, seconds(MeasureReplacementsCreated)), ""))
		add(row(timeSec, fmt.Sprintf("restart %d: failure -> all replacements Running", n), "s",
			b.series(ScenarioRestart, SystemCopse, n, seconds(MeasureReplacementsRunning)), jobset,
			b.series(ScenarioRestart, SystemJobSet, n, seconds(MeasureReplacementsRunning)), ""))
		for _, m := range []struct{ name, what string }{
			{MeasureReplacementsCreatedFromFinishedAt, "all replacements created, from finishedAt"},
			{MeasureReplacementsRunningFromFinishedAt, "all replacements Running, from finishedAt"},
			{MeasureOldPodsDeleting, "first old pod deleting"},
			{MeasureOldPodsAllDeleting, "last old pod deleting"},
			{MeasureOldPodsGone, "old pods gone"},
			{MeasureChildRecreated, "new PodClique / Job created"},
			{MeasureFirstReplacementCreated, "first replacement created"},
		} {
			add(row(timeSec, fmt.Sprintf("  failure -> %s", m.what), "s",
				b.series(ScenarioRestart, SystemCopse, n, seconds(m.name)), jobset,
				b.series(ScenarioRestart, SystemJobSet, n, seconds(m.name)), ""))
		}
		add(row(timeSec, fmt.Sprintf("  409 conflicts per restart, restart %d (API server, grove.io objects)", n), "requests",
			b.series(ScenarioRestart, SystemCopse, n, apiConflicts), "", nil, ""))
	}
	if o.has(ScenarioRestartInPlace) {
		n := o.RestartPods
		rep.Notes = append(rep.Notes, fmt.Sprintf("restart in place: the restart scenario's Training replica of %d pods with trainingSpec.restartStrategy InPlace; one pod exits 1; measured to every pod of the replica seen running the new attempt's workload (Running, every main container running, its startup gate open), against the restart scenario's JobSet (Recreate, replacements Running) and copse's own recreation (replacements Running) of the same repetition", n))
		add(row(timeSec, fmt.Sprintf("restart in place %d: failure -> every pod running the new attempt", n), "s",
			b.series(ScenarioRestartInPlace, SystemCopse, n, seconds(MeasureInPlaceAllRunning)), jobset+" Recreate",
			b.series(ScenarioRestart, SystemJobSet, n, seconds(MeasureReplacementsRunning)), ""))
		add(row(timeSec, fmt.Sprintf("restart in place %d vs copse's recreation: failure -> all Running", n), "s",
			b.series(ScenarioRestartInPlace, SystemCopse, n, seconds(MeasureInPlaceAllRunning)), "copse Recreate",
			b.series(ScenarioRestart, SystemCopse, n, seconds(MeasureReplacementsRunning)), ""))
		for _, m := range []struct{ name, what string }{
			{MeasureInPlaceAllMoved, "every kept pod moved to the new attempt"},
			{MeasureInPlaceAllHeld, "every kept pod restarted, held at its gate"},
			{MeasureInPlaceBarrierLifted, "barrier lifted"},
		} {
			add(row(timeSec, "  failure -> "+m.what, "s", b.series(ScenarioRestartInPlace, SystemCopse, n, seconds(m.name)), "", nil, ""))
		}
		add(row(timeSec, fmt.Sprintf("  share of the running pods kept on their node, restart in place %d", n), "ratio",
			b.series(ScenarioRestartInPlace, SystemCopse, n, keptOnNodeShare), "", nil, "1 = every pod that ran restarted in its pod, on its node"))
		add(row(timeSec, fmt.Sprintf("  PodGroup kept (same UID), restart in place %d", n), "ratio",
			b.series(ScenarioRestartInPlace, SystemCopse, n, podGroupKept), "", nil,
			"1 = kept; the bench's pods ask for no GPU, so no ComputeDomain: e2e/placement checks its UID across a restart in place"))
		add(row(timeSec, fmt.Sprintf("  409 conflicts per restart, restart in place %d (API server, grove.io objects)", n), "requests",
			b.series(ScenarioRestartInPlace, SystemCopse, n, apiConflicts), "", nil, ""))
	}
	if o.has(ScenarioTrainJobRestart) {
		n := o.RestartPods
		rep.Notes = append(rep.Notes, fmt.Sprintf("TrainJob restart: one TrainJob of %d torch nodes (maxRestarts 1) built by copse's TrainJob controller into a PodCliqueSet (COPSE column) and into a JobSet (REFERENCE column), in the same repetition; one pod exits 1. The reference is the peer compared, the JobSet backend, not the best achievable; the 'restart %d' rows above stay the comparison of copse's PodCliqueSet with a plain JobSet", n, n))
		trainJobRestartRow := func(name, measure string) {
			add(row(timeSec, name, "s",
				b.series(ScenarioTrainJobRestart, SystemTrainJobPodCliqueSet, n, seconds(measure)), "TrainJob on JobSet",
				b.series(ScenarioTrainJobRestart, SystemTrainJobJobSet, n, seconds(measure)), ""))
		}
		trainJobRestartRow(fmt.Sprintf("TrainJob restart %d, PodCliqueSet backend: failure -> all replacements created", n), MeasureReplacementsCreated)
		trainJobRestartRow(fmt.Sprintf("TrainJob restart %d, PodCliqueSet backend: failure -> all replacements Running", n), MeasureReplacementsRunning)
		for _, m := range []struct{ name, what string }{
			{MeasureOldPodsDeleting, "first old pod deleting"},
			{MeasureOldPodsGone, "old pods gone"},
			{MeasureChildRecreated, "new PodClique / Job created"},
			{MeasureFirstReplacementCreated, "first replacement created"},
		} {
			trainJobRestartRow(fmt.Sprintf("  failure -> %s", m.what), m.name)
		}
	}
	if o.has(ScenarioCompletion) {
		n := o.CompletionPods
		add(row(timeSec, fmt.Sprintf("completion %d: last exit 0 -> Succeeded", n), "s",
			b.series(ScenarioCompletion, SystemCopse, n, seconds(MeasureLastExitToSucceeded)), jobset+" Completed",
			b.series(ScenarioCompletion, SystemJobSet, n, seconds(MeasureLastExitToSucceeded)), ""))
		add(row(timeSec, "  same, from the latest finishedAt", "s",
			b.series(ScenarioCompletion, SystemCopse, n, seconds(MeasureLastExitToSucceededFromFinishedAt)), jobset+" Completed",
			b.series(ScenarioCompletion, SystemJobSet, n, seconds(MeasureLastExitToSucceededFromFinishedAt)), ""))
	}
	if o.has(ScenarioQueuedStart) {
		n, nodes := o.QueuedWorkloads, o.QueuedNodes
		rep.Notes = append(rep.Notes, fmt.Sprintf("queued start: %d TrainJobs of %d torch nodes (JobSet backend, %s cpu per pod) created one after the other in a Kueue %s LocalQueue whose ClusterQueue has quota for all of them, through Kueue's own TrainJob integration (COPSE column), against %d JobSets of the same shape (the JobSets those TrainJobs become) submitted to the same queue through Kueue's JobSet integration (REFERENCE column), in the same repetition; Kueue and the JobSet controller at copse's qps/burst. Kueue runs for this scenario only, after the others, whose Jobs, JobSets and TrainJobs would otherwise go through its webhooks too",
			n, nodes, queuedPodCPU, b.meta.KueueVersion, n))
		queuedRow := func(name, measure string) {
			add(row(timeSec, name, "s",
				b.series(ScenarioQueuedStart, SystemTrainJobKueue, n, seconds(measure)), "JobSets on Kueue",
				b.series(ScenarioQueuedStart, SystemJobSetKueue, n, seconds(measure)), ""))
		}
		queuedRow(fmt.Sprintf("queued start through Kueue, %d TrainJobs x %d pods: create -> all pods Running", n, nodes), MeasureAllPodsRunning)
		queuedRow("  create -> all created (admission webhooks answered)", MeasureAllCreated)
		queuedRow("  create -> all Workloads made (Kueue's job integration)", MeasureAllWorkloadsSeen)
		queuedRow("  create -> all Workloads admitted", MeasureAllAdmitted)
		queuedCost := func(name, unit string, get func(*QueueCost) float64) {
			of := func(r Run) (float64, bool) {
				if r.Queue == nil {
					return 0, false
				}
				return get(r.Queue), true
			}
			add(row(apiSec, name, unit,
				b.series(ScenarioQueuedStart, SystemTrainJobKueue, n, of), "JobSets on Kueue",
				b.series(ScenarioQueuedStart, SystemJobSetKueue, n, of), ""))
		}
		queuedCost("queued start: job changes until the last Workload (Kueue reconciler inputs: TrainJobs and their JobSets, or JobSets)", "changes",
			func(q *QueueCost) float64 { return float64(q.JobChanges["TrainJob"] + q.JobChanges["JobSet"]) })
		queuedCost("  of them TrainJob changes", "changes", func(q *QueueCost) float64 { return float64(q.JobChanges["TrainJob"]) })
		queuedCost("  dry-run Workload creates until the last admission (Kueue's TrainJob pod sets, one per pass)", "requests",
			func(q *QueueCost) float64 { return q.WorkloadDryRuns })
		queuedCost("  API server time answering them", "s", func(q *QueueCost) float64 { return q.WorkloadDryRunSeconds })
	}
	if o.has(ScenarioContention) {
		n := o.ContentionPods
		idle := "idle server"
		rep.Notes = append(rep.Notes, fmt.Sprintf("contention: an observer with a ServiceAccount of its own (API Priority and Fairness: service-accounts / workload-low) GETs one ConfigMap and LISTs its namespace's ConfigMaps every %s, for %s on the idle server, while copse creates %d gated pods, and while the API-limit client (copse's identity, no client-side limit, %d creators) creates as many, in every repetition", o.ObserverInterval, o.ObserverIdle, n, o.ContentionParallelism))
		copseLevel := flowControlName
		if !b.meta.FlowControl {
			copseLevel = "workload-low"
		}
		for _, burst := range []struct{ system, who string }{{SystemCopse, "copse"}, {SystemAPILimit, "the API-limit client"}} {
			for _, m := range []struct {
				what string
				get  func(*ObserverLatency) float64
			}{
				{"GET p50", func(l *ObserverLatency) float64 { return l.GetP50 }},
				{"GET p99", func(l *ObserverLatency) float64 { return l.GetP99 }},
				{"GET max", func(l *ObserverLatency) float64 { return l.GetMax }},
				{"LIST p50", func(l *ObserverLatency) float64 { return l.ListP50 }},
				{"LIST p99", func(l *ObserverLatency) float64 { return l.ListP99 }},
				{"LIST max", func(l *ObserverLatency) float64 { return l.ListMax }},
				{"requests failed", func(l *ObserverLatency) float64 { return float64(l.Errors) }},
			} {
				unit := "s"
				if m.what == "requests failed" {
					unit = "requests"
				}
				add(row(apfSec, fmt.Sprintf("observer %s while %s creates %d pods", m.what, burst.who, n), unit,
					b.series(ScenarioContention, burst.system, n, latency(m.get)), idle,
					b.series(ScenarioContention, SystemIdle, n, latency(m.get)), ""))
			}
			add(row(apfSec, fmt.Sprintf("  %s under observation: create -> %d-th pod", burst.who, n), "s",
				b.series(ScenarioContention, burst.system, n, seconds(MeasureAllPodsCreated)), "", nil, ""))
			for _, level := range slices.Compact([]string{copseLevel, "workload-low"}) {
				for _, m := range []struct {
					what, unit string
					get        func(PriorityLevelCost) float64
				}{
					{"requests dispatched", "requests", func(c PriorityLevelCost) float64 { return c.Dispatched }},
					{"mean queue wait", "s", func(c PriorityLevelCost) float64 { return c.MeanWaitSeconds }},
					{"rejected (429)", "requests", func(c PriorityLevelCost) float64 { return c.Rejected }},
				} {
					add(row(apfSec, fmt.Sprintf("  APF level %s during %s's burst: %s", level, burst.who, m.what), m.unit,
						b.series(ScenarioContention, burst.system, n, levelCost(level, m.get)), "", nil, ""))
				}
			}
		}
	}
	if o.has(ScenarioCreation) {
		for _, n := range o.Sizes {
			limit, _ := b.bestSeries(ScenarioCreation, SystemAPILimit, n, seconds(MeasureAllPodsCreated), writesPerPod)
			add(row(apiSec, fmt.Sprintf("API writes per pod, creation N=%d", n), "writes",
				b.series(ScenarioCreation, SystemCopse, n, writesPerPod), apiLimit, limit, ""))
		}
	}
	if o.has(ScenarioRestart) {
		n := o.RestartPods
		add(row(apiSec, fmt.Sprintf("API writes per replacement pod, restart %d", n), "writes",
			b.series(ScenarioRestart, SystemCopse, n, writesPerPod), "", nil, ""))
		for _, r := range b.conflictAndStatusRows(apiSec, ScenarioRestart, fmt.Sprintf("restart %d", n), n, false) {
			add(r)
		}
		add(row(apiSec, fmt.Sprintf("status changes per restart, restart %d: workload (watch)", n), "writes",
			b.series(ScenarioRestart, SystemCopse, n, statusWritesOf("PodCliqueSet")), jobset,
			b.series(ScenarioRestart, SystemJobSet, n, statusWritesOf("JobSet")), "PodCliqueSet vs JobSet status"))
	}
	if o.has(ScenarioCompletion) {
		n := o.CompletionPods
		add(row(apiSec, fmt.Sprintf("API writes per pod, lifecycle %d (create -> Succeeded)", n), "writes",
			b.series(ScenarioCompletion, SystemCopse, n, writesPerPod), "", nil, ""))
		for _, r := range b.conflictAndStatusRows(apiSec, ScenarioCompletion, fmt.Sprintf("lifecycle %d", n), n, true) {
			add(r)
		}
		add(row(apiSec, fmt.Sprintf("status changes per PodCliqueSet, lifecycle %d (watch)", n), "writes",
			b.series(ScenarioCompletion, SystemCopse, n, statusChangesPer("PodCliqueSet")), jobset,
			b.series(ScenarioCompletion, SystemJobSet, n, statusWritesOf("JobSet")), "PodCliqueSet vs JobSet status"))
		add(row(apiSec, fmt.Sprintf("status changes per PodClique, lifecycle %d (watch)", n), "writes",
			b.series(ScenarioCompletion, SystemCopse, n, statusChangesPer("PodClique")), "", nil, ""))
	}
	var reconcileErrs []float64
	for _, r := range b.runs {
		if r.ReconcileErrors != nil && r.Repetition >= 1 {
			reconcileErrs = append(reconcileErrs, *r.ReconcileErrors)
		}
	}
	if len(reconcileErrs) > 0 {
		add(row(opSec, "operator reconcile errors per copse run", "errors", reconcileErrs, "", nil, "controller_runtime_reconcile_errors_total"))
	}
	if o.has(ScenarioCreation) {
		for _, n := range o.Sizes {
			add(row(opSec, fmt.Sprintf("operator CPU per run, creation N=%d", n), "s",
				b.series(ScenarioCreation, SystemCopse, n, cpuSeconds), "", nil, ""))
		}
		n := o.Sizes[len(o.Sizes)-1]
		add(row(opSec, fmt.Sprintf("operator peak RSS, creation N=%d", n), "MiB",
			b.series(ScenarioCreation, SystemCopse, n, peakRSSMiB), "", nil, ""))
	}
	if o.has(ScenarioCompletion) {
		n := o.CompletionPods
		for _, controller := range b.controllers(ScenarioCompletion) {
			add(row(opSec, fmt.Sprintf("%s reconciles per run, lifecycle %d", controller, n), "reconciles",
				b.series(ScenarioCompletion, SystemCopse, n, reconciles(controller)), "", nil, ""))
		}
	}
	controller := "JobSet controller"
	if o.has(ScenarioRestart) {
		n := o.RestartPods
		add(row(opSec, fmt.Sprintf("operator CPU per run, restart %d", n), "s",
			b.series(ScenarioRestart, SystemCopse, n, cpuSeconds), controller,
			b.series(ScenarioRestart, SystemJobSet, n, cpuSeconds), ""))
	}
	if o.has(ScenarioCompletion) {
		n := o.CompletionPods
		add(row(opSec, fmt.Sprintf("operator CPU per run, lifecycle %d", n), "s",
			b.series(ScenarioCompletion, SystemCopse, n, cpuSeconds), controller,
			b.series(ScenarioCompletion, SystemJobSet, n, cpuSeconds), ""))
		add(row(opSec, fmt.Sprintf("operator peak RSS, lifecycle %d", n), "MiB",
			b.series(ScenarioCompletion, SystemCopse, n, peakRSSMiB), "JobSet controller",
			b.series(ScenarioCompletion, SystemJobSet, n, peakRSSMiB), ""))
	}
	if b.startupPeakRSS > 0 {
		v := float64(b.startupPeakRSS) / (1 << 20)
		add(row(opSec, "operator peak RSS before the first run", "MiB", []float64{v}, "", nil, ""))
	}
	rep.Rows = rows
	return rep
}

// WriteJSON writes the report to dir/bench-results.json and returns the
// path.
func (r *Results) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, ResultsFile)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// PrintTable writes the rows as a table: min / median / max of copse and
// of the reference, and the median [min-max] of copse/reference paired by
// repetition.
func (r *Results) PrintTable(w io.Writer) {
	m := r.Meta
	fmt.Fprintf(w, "copse benchmark, %s, %d repetition(s), %d CPUs (%s), load average %s -> %s, took %s\n",
		m.StartedAt.Format(time.RFC3339), m.Options.Repetitions, m.CPUs, m.CPUModel, m.LoadAverageStart, m.LoadAverageEnd,
		time.Duration(m.DurationSeconds*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(w, "operator client qps %g burst %d; figures are min / median / max over the repetitions; ratio = copse / reference, paired by repetition\n\n",
		m.OperatorQPS, m.OperatorBurst)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tUNIT\tCOPSE\tREFERENCE\tREFERENCE VALUE\tRATIO median [min-max]")
	section := ""
	for _, row := range r.Rows {
		if row.Section != section && section != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t")
		}
		section = row.Section
		ref, refValue, ratio := "-", "-", "-"
		if row.ReferenceName != "" {
			ref = row.ReferenceName
			refValue = formatSummary(*row.Reference, row.Unit)
		}
		if row.Ratio != nil && !row.Ratio.Empty() {
			ratio = fmt.Sprintf("%.2f [%.2f-%.2f]", row.Ratio.Median, row.Ratio.Min, row.Ratio.Max)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Name, row.Unit, formatSummary(row.Copse, row.Unit), ref, refValue, ratio)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\n%d run(s) failed:\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(e, "\n", "\n    "))
		}
	}
}

func formatSummary(s Summary, unit string) string {
	if s.Empty() {
		return "n/a"
	}
	format := "%.2f"
	switch unit {
	case "s":
		format = "%.3f"
	case "MiB":
		format = "%.1f"
	}
	if len(s.Samples) == 1 {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" / "+format+" / "+format, s.Min, s.Median, s.Max)
}
