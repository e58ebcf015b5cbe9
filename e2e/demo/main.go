// Command copse-demo is `make demo`: it brings up the local cluster with
// simulated GPU nodes, installs copse with its Helm chart (local mode),
// starts the JobSet controller, Kueue (with a queue the queued TrainJob
// samples are submitted to) and the operator as local processes, the
// operator with the chart's ServiceAccount identity, applies the samples in
// samples/ (training runtimes first), shows live tables of the workloads,
// the TrainJobs and what Kueue says of the queued ones until every Training
// and TrainJob sample has ended, and says what each sample did.
//
//	copse-demo [--dir D] [--samples DIR] [--timeout 5m]   run the demo
//	copse-demo down [--dir D]                             stop the controllers, the operator and the cluster
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	args := os.Args[1:]
	command := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "down") {
		command, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(command, flag.ExitOnError)
	dir := fs.String("dir", defaultDir(), "directory of the demo cluster (logs, kubeconfig, operator state)")
	samples := fs.String("samples", "samples", "directory of the sample manifests to apply")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the Training and TrainJob samples to end")
	_ = fs.Parse(args)

	var err error
	switch command {
	case "down":
		err = down(*dir)
	default:
		err = run(ctx, demoOptions{dir: *dir, samplesDir: *samples, timeout: *timeout})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "copse-demo: %v\n", err)
		os.Exit(1)
	}
}

func defaultDir() string {
	cache, err := os.UserCacheDir()
	if env := os.Getenv("COPSE_CACHE_DIR"); env != "" {
		return filepath.Join(env, "clusters", "demo")
	}
	if err != nil {
		return filepath.Join(os.TempDir(), "copse-demo")
	}
	return filepath.Join(cache, "copse", "clusters", "demo")
}

var errSamplesNotDone = errors.New("the Training and TrainJob samples did not all end in time")
