package main

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The tiers of `make test`, in the order the summary lists them.
const (
	tierTools      = "tools"
	tierVerify     = "verify"
	tierUnit       = "unit"
	tierFuzz       = "fuzz"
	tierE2E        = "e2e"
	tierBenchSmoke = "bench-smoke"
)

// allTiers is what `make test` runs.
var allTiers = []string{tierTools, tierVerify, tierUnit, tierFuzz, tierE2E, tierBenchSmoke}

// A job is one command of the run: a Makefile target or one e2e package's
// `go test`.
type job struct {
	// name identifies it in progress lines, the summary and its log file:
	// the tier, or the package for e2e ("e2e/training").
	name string
	tier string
	argv []string
	// typical is how long it takes on the reference machine; it only
	// orders the jobs of a stage.
	typical time.Duration
}

// typical is how long each job took on the 2-core reference machine with
// warm caches, one at a time (rounded up). A stage starts its longest jobs
// first, so that the last to end are short ones: the run lasts little more
// than its longest job or its share of the total, whichever is larger. Only
// the order depends on these figures; update them when a job grows.
var typical = map[string]time.Duration{
	"e2e/training":                        510 * time.Second,
	"e2e/inference":                       460 * time.Second,
	"e2e/placement":                       400 * time.Second,
	"e2e/trainjob":                        330 * time.Second,
	"e2e/reliability":                     325 * time.Second,
	tierUnit:                              180 * time.Second,
	"e2e/kueue":                           170 * time.Second,
	tierBenchSmoke:                        150 * time.Second,
	tierFuzz:                              90 * time.Second,
	"e2e/cluster":                         85 * time.Second,
	"e2e/core":                            85 * time.Second,
	"e2e/chaos":                           80 * time.Second,
	"e2e/realnode":                        80 * time.Second,
	"e2e/webhook":                         55 * time.Second,
	"e2e/helm":                            55 * time.Second,
	"e2e/trainerparity":                   35 * time.Second,
	"e2e/foundation":                      30 * time.Second,
	"e2e/placement/withoutcomputedomains": 25 * time.Second,
	"e2e/certificates":                    20 * time.Second,
	"e2e/bench":                           5 * time.Second,
}

// Typical times of jobs the table does not name: a Ginkgo suite not
// measured yet counts as long, so that it starts early rather than last; a
// package of plain unit tests takes seconds.
const (
	unknownSuiteTypical = 10 * time.Minute
	unitPackageTypical  = 10 * time.Second
)

// e2ePackage is a package under e2e/ with tests.
type e2ePackage struct {
	// path is relative to the module ("e2e/training").
	path string
	// ginkgo: its tests are a Ginkgo suite, which takes the -ginkgo flags.
	ginkgo bool
}

// planOptions are the inputs of plan.
type planOptions struct {
	tiers    []string
	packages []e2ePackage
	// labels is the Ginkgo label filter of the e2e suites ("" runs all).
	labels     string
	e2eTimeout time.Duration
	// make is the make command that runs the other tiers' targets.
	make string
}

// plan returns the run's stages: each stage starts once the previous one
// has ended, and runs its jobs longest first. The tools are built first
// (every other tier uses them), then verify runs alone (it regenerates
// files the others compile), then everything else shares the machine.
func plan(o planOptions) [][]job {
	var stages [][]job
	target := func(tier, name string) job {
		return job{name: tier, tier: tier, argv: []string{o.make, "--no-print-directory", name}, typical: typicalOf(tier, false)}
	}
	if slices.Contains(o.tiers, tierTools) {
		stages = append(stages, []job{target(tierTools, "tools")})
	}
	if slices.Contains(o.tiers, tierVerify) {
		stages = append(stages, []job{target(tierVerify, "verify")})
	}
	var pool []job
	if slices.Contains(o.tiers, tierUnit) {
		pool = append(pool, target(tierUnit, "test-unit"))
	}
	if slices.Contains(o.tiers, tierFuzz) {
		pool = append(pool, target(tierFuzz, "test-fuzz"))
	}
	if slices.Contains(o.tiers, tierE2E) {
		for _, p := range o.packages {
			pool = append(pool, e2eJob(p, o))
		}
	}
	if slices.Contains(o.tiers, tierBenchSmoke) {
		pool = append(pool, target(tierBenchSmoke, "bench-smoke"))
	}
	if len(pool) > 0 {
		stages = append(stages, longestFirst(pool))
	}
	return stages
}

func e2eJob(p e2ePackage, o planOptions) job {
	argv := []string{"go", "test", "-v", "-count=1", "-timeout", o.e2eTimeout.String(), "./" + p.path}
	if p.ginkgo {
		argv = append(argv, "-args", "-ginkgo.label-filter="+o.labels)
	}
	return job{name: p.path, tier: tierE2E, argv: argv, typical: typicalOf(p.path, p.ginkgo)}
}

func typicalOf(name string, suite bool) time.Duration {
	if d, ok := typical[name]; ok {
		return d
	}
	if suite {
		return unknownSuiteTypical
	}
	return unitPackageTypical
}

// longestFirst orders jobs by typical time, longest first, then by name.
func longestFirst(jobs []job) []job {
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b job) int {
		return cmp.Or(cmp.Compare(b.typical, a.typical), strings.Compare(a.name, b.name))
	})
	return out
}
