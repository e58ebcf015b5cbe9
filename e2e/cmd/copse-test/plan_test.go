package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func names(jobs []job) []string {
	out := make([]string, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.name)
	}
	return out
}

func TestPlanRunsToolsThenVerifyAloneThenEverythingElseLongestFirst(t *testing.T) {
	packages := []e2ePackage{
		{path: "e2e/webhook", ginkgo: true},
		{path: "e2e/training", ginkgo: true},
		{path: "e2e/process"},
		{path: "e2e/brand-new", ginkgo: true},
		{path: "e2e/inference", ginkgo: true},
	}
	stages := plan(planOptions{tiers: allTiers, packages: packages, e2eTimeout: time.Hour, make: "make"})
	var got [][]string
	for _, s := range stages {
		got = append(got, names(s))
	}
	want := [][]string{
		{"tools"},
		{"verify"},
		// An unmeasured suite first, then by typical time; a plain unit
		// test package last.
		{"e2e/brand-new", "e2e/training", "e2e/inference", "unit", "bench-smoke", "fuzz", "e2e/webhook", "e2e/process"},
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("plan =\n%v\nwant\n%v", got, want)
	}
}

func TestPlanRunsEveryPackage(t *testing.T) {
	var packages []e2ePackage
	for _, p := range []string{"e2e/a", "e2e/b", "e2e/b/c", "e2e/d"} {
		packages = append(packages, e2ePackage{path: p, ginkgo: p != "e2e/d"})
	}
	stages := plan(planOptions{tiers: []string{tierE2E}, packages: packages, e2eTimeout: time.Hour, make: "make"})
	if len(stages) != 1 {
		t.Fatalf("%d stages, want the e2e pool only", len(stages))
	}
	got := names(stages[0])
	slices.Sort(got)
	if !slices.Equal(got, []string{"e2e/a", "e2e/b", "e2e/b/c", "e2e/d"}) {
		t.Errorf("jobs %v, want one per package", got)
	}
}

func TestE2EJobCommand(t *testing.T) {
	o := planOptions{labels: "training && !slow", e2eTimeout: 45 * time.Minute}
	suite := e2eJob(e2ePackage{path: "e2e/training", ginkgo: true}, o)
	if got, want := strings.Join(suite.argv, " "), "go test -v -count=1 -timeout 45m0s ./e2e/training -args -ginkgo.label-filter=training && !slow"; got != want {
		t.Errorf("suite argv = %q, want %q", got, want)
	}
	// Only a Ginkgo suite knows the -ginkgo flags; a plain test binary
	// would refuse them.
	plain := e2eJob(e2ePackage{path: "e2e/process"}, o)
	if got, want := strings.Join(plain.argv, " "), "go test -v -count=1 -timeout 45m0s ./e2e/process"; got != want {
		t.Errorf("plain argv = %q, want %q", got, want)
	}
}

func TestPlanOfSomeTiers(t *testing.T) {
	stages := plan(planOptions{tiers: []string{tierTools, tierE2E}, packages: []e2ePackage{{path: "e2e/core", ginkgo: true}}, make: "make"})
	var got []string
	for _, s := range stages {
		got = append(got, strings.Join(names(s), "+"))
	}
	if !slices.Equal(got, []string{"tools", "e2e/core"}) {
		t.Errorf("stages %v", got)
	}
	if argv := stages[0][0].argv; !slices.Equal(argv, []string{"make", "--no-print-directory", "tools"}) {
		t.Errorf("tools argv %v", argv)
	}
}

func TestParseE2EPackages(t *testing.T) {
	raw := `{"ImportPath": "github.com/copse-dev/copse/e2e/core", "XTestGoFiles": ["suite_test.go"], "XTestImports": ["context", "github.com/onsi/ginkgo/v2"]}
{"ImportPath": "github.com/copse-dev/copse/e2e/cmd/copse-cluster"}
{"ImportPath": "github.com/copse-dev/copse/e2e/process", "TestGoFiles": ["process_test.go"], "TestImports": ["testing"]}
`
	got, err := parseE2EPackages([]byte(raw), modulePath)
	if err != nil {
		t.Fatal(err)
	}
	want := []e2ePackage{{path: "e2e/core", ginkgo: true}, {path: "e2e/process"}}
	if !slices.Equal(got, want) {
		t.Errorf("parseE2EPackages = %+v, want %+v", got, want)
	}
}
