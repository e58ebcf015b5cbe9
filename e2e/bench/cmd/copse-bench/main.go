// Command copse-bench runs copse's benchmark (package e2e/bench) on a local
// cluster it starts and stops itself, prints a table and writes
// bench-results.json into --out-dir. It exits 1 only if a run could not be
// carried out (an error or a timeout), never because of a figure.
//
//	go run ./e2e/bench/cmd/copse-bench                       # full: N=64,512,1024, 3 repetitions
//	go run ./e2e/bench/cmd/copse-bench --sizes 64 --repetitions 1
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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/copse-dev/copse/e2e/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		sizes       = flag.String("sizes", "64,512,1024", "pod counts of the creation scenario, comma-separated")
		reps        = flag.Int("repetitions", 3, "repetitions of every scenario (min/median/max need 3)")
		scenarios   = flag.String("scenarios", "creation,restart,completion", "scenarios to run, comma-separated")
		outDir      = flag.String("out-dir", "bin/bench", "directory for "+bench.ResultsFile)
		restartPods = flag.Int("restart-pods", 64, "pods of the restart scenario's replica")
		donePods    = flag.Int("completion-pods", 64, "pods of the completion scenario")
		runFor      = flag.Duration("completion-run-duration", 3*time.Second, "how long the completion scenario's pods run")
		parallelism = flag.Int("reference-parallelism", 64, "the plain client's creates in flight")
		runTimeout  = flag.Duration("run-timeout", 4*time.Minute, "time limit of one run, cleanup included")
		timeout     = flag.Duration("timeout", 40*time.Minute, "time limit of the whole benchmark")
		keep        = flag.Bool("keep-cluster", false, "keep the cluster directory (component logs) after the run")
		logLevel    = flag.String("operator-log-level", "", `the operator's log level ("debug", "info", "error"; default: its own)`)
	)
	flag.Parse()
	// The shared e2e framework logs through controller-runtime; nothing of
	// it is useful here.
	ctrllog.SetLogger(logr.Discard())
	// Its progress lines (GinkgoWriter, stdout outside a suite) go to
	// stderr with ours, so that stdout holds the table only.
	ginkgo.GinkgoWriter = stderrWriter{}

	opts := bench.Options{
		Repetitions:           *reps,
		RestartPods:           *restartPods,
		CompletionPods:        *donePods,
		CompletionRunDuration: *runFor,
		ReferenceParallelism:  *parallelism,
		RunTimeout:            *runTimeout,
		KeepCluster:           *keep,
		OperatorLogLevel:      *logLevel,
		Progress:              os.Stderr,
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "copse-bench: bad size %q\n", s)
			return 2
		}
		opts.Sizes = append(opts.Sizes, n)
	}
	for _, s := range strings.Split(*scenarios, ",") {
		switch s = strings.TrimSpace(s); s {
		case bench.ScenarioCreation, bench.ScenarioRestart, bench.ScenarioCompletion:
			opts.Scenarios = append(opts.Scenarios, s)
		default:
			fmt.Fprintf(os.Stderr, "copse-bench: unknown scenario %q\n", s)
			return 2
		}
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
	report := b.Run(ctx)
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

// stderrWriter is a GinkgoWriter that writes to stderr.
type stderrWriter struct{}

func (stderrWriter) Write(p []byte) (int, error)    { return os.Stderr.Write(p) }
func (stderrWriter) Print(a ...any)                 { fmt.Fprint(os.Stderr, a...) }
func (stderrWriter) Printf(format string, a ...any) { fmt.Fprintf(os.Stderr, format, a...) }
func (stderrWriter) Println(a ...any)               { fmt.Fprintln(os.Stderr, a...) }
func (stderrWriter) TeeTo(io.Writer)                {}
func (stderrWriter) ClearTeeWriters()               {}
