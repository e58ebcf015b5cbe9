// Command copse-bench runs copse's benchmark (package e2e/bench) on a local
// cluster it starts and stops itself, prints a table and writes
// bench-results.json into --out-dir. It exits 1 only if a run could not be
// carried out (an error or a timeout), never because of a figure.
//
//	go run ./e2e/bench/cmd/copse-bench                       # full: N=64,512,1024,4096, 3 repetitions
//	go run ./e2e/bench/cmd/copse-bench --sizes 64 --repetitions 1
//	go run ./e2e/bench/cmd/copse-bench --scale                # 10,000 pods on 1,000 nodes
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/ginkgo/v2"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/copse-dev/copse/e2e/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		sizes       = flag.String("sizes", "64,512,1024,4096", "pod counts of the creation scenario, comma-separated")
		reps        = flag.Int("repetitions", 3, "repetitions of every scenario (min/median/max need 3)")
		scenarios   = flag.String("scenarios", "creation,restart,restart-inplace,completion,contention,trainjob-restart,queued-start", "scenarios to run, comma-separated")
		outDir      = flag.String("out-dir", "bin/bench", "directory for "+bench.ResultsFile)
		restartPods = flag.Int("restart-pods", 64, "pods of the restart scenario's replica, and nodes of the trainjob-restart scenario's TrainJob")
		donePods    = flag.Int("completion-pods", 64, "pods of the completion scenario")
		runFor      = flag.Duration("completion-run-duration", 3*time.Second, "how long the completion scenario's pods run")
		queued      = flag.Int("queued-workloads", 32, "TrainJobs (and reference JobSets) the queued-start scenario submits to Kueue")
		queuedNodes = flag.Int("queued-nodes", 4, "pods of each workload of the queued-start scenario")
		parallelism = flag.String("reference-parallelism", "16,32,64", "concurrent creators of the API-limit reference, each tried in every repetition (the fastest is the reference)")
		sameQPS     = flag.Bool("same-qps-reference", true, "also run the secondary reference: a client limited to copse's qps/burst")
		contention  = flag.Int("contention-pods", 0, "pods copse creates while the contention scenario's observer measures (default: the largest size)")
		contPar     = flag.Int("contention-parallelism", 256, "creators of the API-limit client's burst in the contention scenario")
		interval    = flag.Duration("observer-interval", 50*time.Millisecond, "how often the observer sends a GET and a LIST")
		idle        = flag.Duration("observer-idle", 10*time.Second, "how long the observer measures the idle server")
		flowControl = flag.Bool("flow-control", true, "install the chart's API Priority and Fairness objects (flowControl.enabled)")
		runTimeout  = flag.Duration("run-timeout", 4*time.Minute, "time limit of one run, cleanup included")
		timeout     = flag.Duration("timeout", 60*time.Minute, "time limit of the whole benchmark")
		keep        = flag.Bool("keep-cluster", false, "keep the cluster directory (component logs) after the run")
		logLevel    = flag.String("operator-log-level", "", `the operator's log level ("debug", "info", "error"; default: the chart's)`)

		scale         = flag.Bool("scale", false, "run the scale benchmark (make bench-scale) instead of the scenarios")
		scalePods     = flag.Int("scale-pods", 10000, "scale: pods in all (a tenth in Inference workloads)")
		scaleNodes    = flag.Int("scale-nodes", 1000, "scale: simulated nodes")
		scaleTraining = flag.Int("scale-training", 0, "scale: Training PodCliqueSets of 64 to 512 pods (default: one per 100 pods)")
		scaleNS       = flag.Int("scale-namespaces", 10, "scale: namespaces the workloads are spread over")
		scaleSeed     = flag.Uint64("scale-seed", 1, "scale: seed of the Training sizes")
		scaleRunFor   = flag.Duration("scale-run-duration", 30*time.Second, "scale: how long each Training pod runs")
		scaleRunLimit = flag.Duration("scale-timeout", 30*time.Minute, "scale: time limit from the first create to the last workload done")
	)
	flag.Parse()
	// The shared e2e framework logs through controller-runtime; nothing of
	// it is useful here.
	ctrllog.SetLogger(logr.Discard())
	// client-go's own log lines (e.g. the same-QPS client announcing its
	// client-side throttling, which is the point of that client) would
	// interleave with the progress lines.
	klog.SetLogger(logr.Discard())
	// Its progress lines (GinkgoWriter, stdout outside a suite) go to
	// stderr with ours, so that stdout holds the table only.
	ginkgo.GinkgoWriter = stderrWriter{}

	opts := bench.Options{
		Repetitions:             *reps,
		RestartPods:             *restartPods,
		CompletionPods:          *donePods,
		CompletionRunDuration:   *runFor,
		QueuedWorkloads:         *queued,
		QueuedNodes:             *queuedNodes,
		WithoutSameQPSReference: !*sameQPS,
		ContentionPods:          *contention,
		ContentionParallelism:   *contPar,
		ObserverInterval:        *interval,
		ObserverIdle:            *idle,
		WithoutFlowControl:      !*flowControl,
		RunTimeout:              *runTimeout,
		KeepCluster:             *keep,
		OperatorLogLevel:        *logLevel,
		Progress:                os.Stderr,
	}
	var err error
	if opts.Sizes, err = positiveInts("sizes", *sizes); err != nil {
		fmt.Fprintf(os.Stderr, "copse-bench: %v\n", err)
		return 2
	}
	if opts.ReferenceParallelism, err = positiveInts("reference-parallelism", *parallelism); err != nil {
		fmt.Fprintf(os.Stderr, "copse-bench: %v\n", err)
		return 2
	}
	for _, s := range strings.Split(*scenarios, ",") {
		switch s = strings.TrimSpace(s); s {
		case bench.ScenarioCreation, bench.ScenarioRestart, bench.ScenarioRestartInPlace, bench.ScenarioCompletion, bench.ScenarioContention, bench.ScenarioTrainJobRestart, bench.ScenarioQueuedStart:
			opts.Scenarios = append(opts.Scenarios, s)
		default:
			fmt.Fprintf(os.Stderr, "copse-bench: --scenarios: unknown scenario %q (known: creation, restart, restart-inplace, completion, contention, trainjob-restart, queued-start)\n", s)
			return 2
		}
	}

	var scaleOpts bench.ScaleOptions
	if *scale {
		scaleOpts = bench.ScaleOptions{Pods: *scalePods, Nodes: *scaleNodes, TrainingWorkloads: *scaleTraining,
			Namespaces: *scaleNS, Seed: *scaleSeed, RunDuration: *scaleRunFor, Timeout: *scaleRunLimit}
		scaleOpts.SetDefaults()
		topology := bench.ScaleTopology(scaleOpts.Nodes)
		opts.Scenarios, opts.Topology = []string{bench.ScenarioScale}, &topology
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	b, err := bench.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "copse-bench: %v\n", err)
		return 1
	}
	var report *bench.Results
	if *scale {
		report = b.RunScale(ctx, scaleOpts)
	} else {
		report = b.Run(ctx)
	}
	if err := b.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "copse-bench: stop: %v\n", err)
	}
	path, err := report.WriteJSON(*outDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "copse-bench: %v\n", err)
		return 1
	}
	fmt.Println()
	report.PrintTable(os.Stdout)
	fmt.Printf("\nresults: %s\n", path)
	if report.Failed() {
		return 1
	}
	return 0
}

// positiveInts parses a comma-separated list of positive integers.
func positiveInts(flagName, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// stderrWriter is a GinkgoWriter that writes to stderr.
type stderrWriter struct{}

func (stderrWriter) Write(p []byte) (int, error)    { return os.Stderr.Write(p) }
func (stderrWriter) Print(a ...any)                 { fmt.Fprint(os.Stderr, a...) }
func (stderrWriter) Printf(format string, a ...any) { fmt.Fprintf(os.Stderr, format, a...) }
func (stderrWriter) Println(a ...any)               { fmt.Fprintln(os.Stderr, a...) }
func (stderrWriter) TeeTo(io.Writer)                {}
func (stderrWriter) ClearTeeWriters()               {}
