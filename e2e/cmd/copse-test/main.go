// Command copse-test runs copse's test tiers for `make test` and `make
// test-e2e`: the pinned tools first, then verify alone, then the unit tests,
// the fuzz targets, every package under e2e/ (one `go test` each, so that
// each suite starts its own cluster) and the benchmark's smoke run, --parallel
// at a time, longest first. It ends with a table of when each tier and each
// job ran and how long it took, and fails when any job failed.
//
//	copse-test [--parallel N] [--tiers tools,verify,unit,fuzz,e2e,bench-smoke] [--labels L] [--e2e-timeout D] [--log-dir D]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

const ginkgoPackage = "github.com/onsi/ginkgo/v2"

func main() {
	parallel := flag.Int("parallel", 3, "how many jobs run at once after verify")
	tiers := flag.String("tiers", strings.Join(allTiers, ","), "the tiers to run, comma-separated: "+strings.Join(allTiers, ", "))
	labels := flag.String("labels", "", "Ginkgo label filter of the e2e suites (empty runs every spec)")
	e2eTimeout := flag.Duration("e2e-timeout", 60*time.Minute, "go test -timeout of each e2e package")
	logDir := flag.String("log-dir", "bin/test-logs", "directory of the jobs' logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, runOptions{
		parallel: *parallel, tiers: strings.Split(*tiers, ","), labels: *labels, e2eTimeout: *e2eTimeout, logDir: *logDir, out: os.Stdout,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "copse-test:", err)
		os.Exit(1)
	}
}

type runOptions struct {
	parallel   int
	tiers      []string
	labels     string
	e2eTimeout time.Duration
	logDir     string
	out        io.Writer
}

func run(ctx context.Context, o runOptions) error {
	for _, t := range o.tiers {
		if !slices.Contains(allTiers, t) {
			return fmt.Errorf("unknown tier %q (the tiers: %s)", t, strings.Join(allTiers, ", "))
		}
	}
	if o.parallel < 1 {
		return fmt.Errorf("--parallel %d: at least one job must run", o.parallel)
	}
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return err
	}
	var packages []e2ePackage
	if slices.Contains(o.tiers, tierE2E) {
		var err error
		if packages, err = listE2EPackages(ctx); err != nil {
			return err
		}
	}
	makeCommand := os.Getenv("MAKE")
	if makeCommand == "" {
		makeCommand = "make"
	}
	stages := plan(planOptions{tiers: o.tiers, packages: packages, labels: o.labels, e2eTimeout: o.e2eTimeout, make: makeCommand})

	r := &runner{parallel: o.parallel, logDir: o.logDir, out: o.out, began: time.Now(), progressEvery: 5 * time.Minute}
	var results []result
	var failed []string
	for _, stage := range stages {
		if len(failed) > 0 || ctx.Err() != nil {
			// A failed stage gates the next: without tools nothing runs,
			// and stale generated files fail every build.
			for _, j := range stage {
				results = append(results, result{job: j, err: errNotRun})
			}
			continue
		}
		for _, res := range r.runStage(ctx, stage) {
			results = append(results, res)
			if res.err != nil {
				failed = append(failed, res.job.name)
			}
		}
	}
	fmt.Fprint(o.out, summary(results, r.began, time.Now(), o.parallel))
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// listE2EPackages lists the packages under e2e/ that have tests, and
// whether each is a Ginkgo suite.
func listE2EPackages(ctx context.Context) ([]e2ePackage, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-json=ImportPath,TestGoFiles,XTestGoFiles,TestImports,XTestImports", "./e2e/...")
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./e2e/...: %w", err)
	}
	return parseE2EPackages(raw, modulePath)
}

// modulePath is copse's module.
const modulePath = "github.com/copse-dev/copse"

// parseE2EPackages reads `go list -json` output: the packages with test
// files, by path relative to the module.
func parseE2EPackages(raw []byte, module string) ([]e2ePackage, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var out []e2ePackage
	for {
		var p struct {
			ImportPath                string
			TestGoFiles, XTestGoFiles []string
			TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			continue
		}
		out = append(out, e2ePackage{
			path:   strings.TrimPrefix(p.ImportPath, module+"/"),
			ginkgo: slices.Contains(p.TestImports, ginkgoPackage) || slices.Contains(p.XTestImports, ginkgoPackage),
		})
	}
	return out, nil
}
