package bench

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/copse-dev/copse/e2e/framework"
)

// WriteCost is the operator's API writes during one run.
type WriteCost struct {
	// Writes is POST + PUT + PATCH + DELETE requests.
	Writes float64 `json:"writes"`
	// ByMethod counts every request, reads included, by method.
	ByMethod map[string]float64 `json:"byMethod"`
	// Conflicts is requests answered 409.
	Conflicts float64 `json:"conflicts"`
	// PodsCreated is the pods the run created (or replaced).
	PodsCreated int `json:"podsCreated"`
	// WritesPerPod is Writes / PodsCreated.
	WritesPerPod float64 `json:"writesPerPod"`
}

// ProcessCost is one controller process's cost during one run.
type ProcessCost struct {
	Process    string  `json:"process"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the peak resident memory during the run (VmHWM reset
	// at its start), or since the process started if the reset failed.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
}

// costProbe measures one run's cost of the copse operator (API requests
// from its own metrics and from the API server's, CPU, memory) or of the
// JobSet controller (CPU, memory).
type costProbe struct {
	process string
	pid     int
	metrics string // the operator's metrics URL; "" for the JobSet controller
	api     kubernetes.Interface
	before  framework.Metrics
	// apiBefore is the API server's metrics at the start.
	apiBefore framework.Metrics
	stats     ProcStats
}

func (b *Bench) startOperatorCost(ctx context.Context) (*costProbe, error) {
	p := &costProbe{process: "copse-operator", pid: b.env.Operator.PID(), metrics: b.env.Operator.MetricsURL(), api: b.env.Clientset}
	var err error
	if p.before, err = framework.ScrapeMetrics(ctx, p.metrics); err != nil {
		return nil, err
	}
	if p.apiBefore, err = framework.ScrapeAPIServerMetrics(ctx, p.api); err != nil {
		return nil, err
	}
	return p, p.startProcess()
}

func (b *Bench) startJobSetCost() (*costProbe, error) {
	p := &costProbe{process: "jobset-controller", pid: b.env.JobSet.PID()}
	return p, p.startProcess()
}

func (p *costProbe) startProcess() error {
	_ = ResetPeakRSS(p.pid)
	var err error
	p.stats, err = ReadProcStats(p.pid)
	return err
}

// finish records the cost since the start into run; podsCreated is the
// denominator of the writes per pod.
func (p *costProbe) finish(ctx context.Context, run *Run, podsCreated int) error {
	stats, err := ReadProcStats(p.pid)
	if err != nil {
		return err
	}
	run.Process = &ProcessCost{Process: p.process, CPUSeconds: stats.CPUSeconds - p.stats.CPUSeconds, PeakRSSBytes: stats.PeakRSSBytes}
	if p.metrics == "" {
		return nil
	}
	after, err := framework.ScrapeMetrics(ctx, p.metrics)
	if err != nil {
		return err
	}
	apiAfter, err := framework.ScrapeAPIServerMetrics(ctx, p.api)
	if err != nil {
		return err
	}
	run.APIServer = apiServerCost(p.apiBefore, apiAfter)
	errs := reconcileErrors(after) - reconcileErrors(p.before)
	run.ReconcileErrors = &errs
	run.Reconciles = reconcileCosts(p.before, after)
	countsAfter, err := operatorRequestCounts(after)
	if err != nil {
		return err
	}
	countsBefore, err := operatorRequestCounts(p.before)
	if err != nil {
		return err
	}
	delta := countsAfter.Sub(countsBefore)
	run.Writes = &WriteCost{Writes: delta.Writes(), ByMethod: delta.ByMethod(), Conflicts: delta.Conflicts(), PodsCreated: podsCreated}
	if podsCreated > 0 {
		run.Writes.WritesPerPod = run.Writes.Writes / float64(podsCreated)
	}
	return nil
}

// Run is the record of one run: one scenario, one system, one repetition.
type Run struct {
	Scenario string `json:"scenario"`
	System   string `json:"system"`
	// Size is the pod count.
	Size int `json:"size"`
	// Parallelism is the reference client's creates in flight.
	Parallelism int `json:"parallelism,omitempty"`
	// Repetition counts from 1; 0 is a warm-up, left out of the summaries.
	Repetition int `json:"repetition"`
	// Seconds are the measured durations, by name (see the scenarios).
	Seconds map[string]float64 `json:"seconds,omitempty"`
	// Kept is what a restart in place kept of the replica's placement
	// (restart-inplace scenario).
	Kept *KeptPlacement `json:"kept,omitempty"`
	// Writes is the operator's API writes (copse runs only).
	Writes *WriteCost `json:"writes,omitempty"`
	// StatusWrites counts status changes seen by watches, by kind.
	StatusWrites map[string]int `json:"statusWrites,omitempty"`
	// Objects counts the PodCliqueSets and PodCliques (by kind) the run's
	// watches saw, the denominators of the per-object figures.
	Objects map[string]int `json:"objects,omitempty"`
	// APIServer is what the API server's metrics counted (copse runs).
	APIServer *APIServerCost `json:"apiServer,omitempty"`
	// ReconcileErrors is the operator's controller_runtime_reconcile_errors_total
	// over the run (copse runs).
	ReconcileErrors *float64 `json:"reconcileErrors,omitempty"`
	// Reconciles is each controller's reconciles and time in Reconcile
	// over the run (copse runs).
	Reconciles map[string]ReconcileCost `json:"reconciles,omitempty"`
	// Latency holds the contention scenario's observer latencies.
	Latency *ObserverLatency `json:"latency,omitempty"`
	// FlowControl is what API Priority and Fairness did, by priority level
	// (contention scenario).
	FlowControl map[string]PriorityLevelCost `json:"flowControl,omitempty"`
	// Process is the controller's CPU and memory during the run.
	Process *ProcessCost `json:"process,omitempty"`
	// Queue is what Kueue's job integration was given and did before it
	// admitted every workload (queued-start scenario).
	Queue *QueueCost `json:"queue,omitempty"`
	// WallSeconds is the run's duration, setup and cleanup included.
	WallSeconds float64 `json:"wallSeconds"`
	Error       string  `json:"error,omitempty"`

	started time.Time
}

func (r Run) String() string {
	s := fmt.Sprintf("%s %s n=%d rep %d:", r.Scenario, r.System, r.Size, r.Repetition)
	if r.Parallelism > 0 {
		s = fmt.Sprintf("%s %s n=%d parallelism %d rep %d:", r.Scenario, r.System, r.Size, r.Parallelism, r.Repetition)
	}
	for _, k := range sortedKeys(r.Seconds) {
		s += fmt.Sprintf(" %s=%.3fs", k, r.Seconds[k])
	}
	if r.Writes != nil {
		s += fmt.Sprintf(" writes/pod=%.2f", r.Writes.WritesPerPod)
	}
	if r.Process != nil {
		s += fmt.Sprintf(" cpu=%.2fs", r.Process.CPUSeconds)
	}
	s += fmt.Sprintf(" (run took %.1fs)", r.WallSeconds)
	if r.Error != "" {
		s += " ERROR: " + r.Error
	}
	return s
}

// QueueCost is what a queued-start run's workloads cost Kueue's job
// integration on its way to their Workloads. Kueue's reconciler for a job
// kind runs one pass at a time and passes a job again for every change of
// the job or of an object it owns (a TrainJob's JobSet); its TrainJob
// integration also computes the pod sets of every pass through a dry-run
// create of a Workload, one round trip through the API server and Kueue's
// own Workload webhooks.
type QueueCost struct {
	// JobChanges counts, by kind, the versions of the submitted objects and
	// of the JobSets they own that were seen until the last Workload was
	// made: each is a pass of Kueue's reconciler for that job (fewer when
	// changes come faster than it runs).
	JobChanges map[string]int `json:"jobChanges,omitempty"`
	// WorkloadDryRuns counts the dry-run Workload creates the API server
	// answered from the first create until just after the last admission,
	// and WorkloadDryRunSeconds the time it spent on them.
	WorkloadDryRuns       float64 `json:"workloadDryRuns"`
	WorkloadDryRunSeconds float64 `json:"workloadDryRunSeconds"`
}

// workloadDryRuns are the API server's dry-run Workload creates between two
// scrapes of its metrics: how many, and the seconds spent answering them.
func workloadDryRuns(before, after framework.Metrics) (count, seconds float64) {
	match := map[string]string{"group": "kueue.x-k8s.io", "resource": "workloads", "verb": "POST", "dry_run": "All"}
	count = after.Sum("apiserver_request_total", match) - before.Sum("apiserver_request_total", match)
	seconds = after.HistogramSum("apiserver_request_duration_seconds", match) - before.HistogramSum("apiserver_request_duration_seconds", match)
	return count, seconds
}
