package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer for the runner's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func shellJob(name, script string) job {
	return job{name: name, tier: tierE2E, argv: []string{"sh", "-c", script}}
}

func newRunner(t *testing.T, parallel int) (*runner, *lockedBuffer) {
	out := &lockedBuffer{}
	return &runner{parallel: parallel, logDir: t.TempDir(), out: out, began: time.Now()}, out
}

// maxOverlap is the largest number of results that ran at one instant.
func maxOverlap(results []result) int {
	most := 0
	for _, a := range results {
		n := 0
		for _, b := range results {
			if !b.start.After(a.start) && b.end.After(a.start) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func TestRunStageRunsParallelJobsAtATime(t *testing.T) {
	for _, parallel := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			r, _ := newRunner(t, parallel)
			var jobs []job
			for i := range 4 {
				jobs = append(jobs, shellJob(fmt.Sprintf("e2e/j%d", i), "sleep 0.3"))
			}
			results := r.runStage(context.Background(), jobs)
			for i, res := range results {
				if res.err != nil || res.job.name != jobs[i].name {
					t.Fatalf("result %d = %s %v, want %s passed", i, res.job.name, res.err, jobs[i].name)
				}
			}
			if got := maxOverlap(results); got != parallel {
				t.Errorf("at most %d jobs ran at once, want %d", got, parallel)
			}
		})
	}
}

func TestRunStageReportsEachJobWholeAndFailures(t *testing.T) {
	r, out := newRunner(t, 2)
	results := r.runStage(context.Background(), []job{
		shellJob("e2e/a", "echo a1; sleep 0.2; echo a2; sleep 0.2; echo a3"),
		shellJob("e2e/b", "echo b1; sleep 0.1; echo b2; sleep 0.1; echo b3 >&2; exit 3"),
	})
	if results[0].err != nil {
		t.Errorf("e2e/a: %v", results[0].err)
	}
	if results[1].err == nil || results[1].err.Error() != "exit status 3" {
		t.Errorf("e2e/b: err %v, want exit status 3", results[1].err)
	}
	text := out.String()
	for _, want := range []string{"a1\na2\na3\n", "b1\nb2\nb3\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks the whole log %q:\n%s", want, text)
		}
	}
	for _, re := range []string{`\] start e2e/a: sh -c echo a1`, `\] ok e2e/a in 0m\d\ds \(log: .*e2e-a\.log\)`, `\] FAILED \(exit status 3\) e2e/b in`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output lacks %s:\n%s", re, text)
		}
	}
}

func TestRunStageStopsWhenInterrupted(t *testing.T) {
	r, _ := newRunner(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	results := r.runStage(ctx, []job{shellJob("e2e/long", "sleep 30"), shellJob("e2e/next", "true")})
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the interrupted stage took %s", took)
	}
	if err := results[0].err; err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("the running job: %v, want interrupted", err)
	}
	if !errors.Is(results[1].err, errNotRun) {
		t.Errorf("the job after it: %v, want not run", results[1].err)
	}
}

// A job that passed but printed process.SkipMarker ran nothing: it is
// reported as skipped, with its reason, never as ok.
func TestRunStageReportsASkippedJobAsSkipped(t *testing.T) {
	r, out := newRunner(t, 1)
	results := r.runStage(context.Background(), []job{
		shellJob("e2e/realnode", "echo 'copse-test: SKIPPED: realnode: real nodes need root'; exit 0"),
	})
	if results[0].err != nil || results[0].skipped != "realnode: real nodes need root" {
		t.Fatalf("result %+v, want skipped with its reason", results[0])
	}
	if !regexp.MustCompile(`\] SKIPPED \(realnode: real nodes need root\) e2e/realnode in`).MatchString(out.String()) {
		t.Errorf("output lacks the skip line:\n%s", out.String())
	}
	began := results[0].start
	got := summary(results, began, results[0].end, 1)
	for _, want := range []string{"ok; SKIPPED: e2e/realnode", "SKIPPED (realnode: real nodes need root)"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}
