package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSummary(t *testing.T) {
	began := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return began.Add(d) }
	results := []result{
		{job: job{name: "tools", tier: tierTools}, start: at(0), end: at(5 * time.Second)},
		{job: job{name: "verify", tier: tierVerify}, start: at(5 * time.Second), end: at(45 * time.Second)},
		{job: job{name: "e2e/training", tier: tierE2E}, start: at(45 * time.Second), end: at(9 * time.Minute)},
		{job: job{name: "unit", tier: tierUnit}, start: at(46 * time.Second), end: at(4 * time.Minute)},
		{job: job{name: "e2e/core", tier: tierE2E}, start: at(4 * time.Minute), end: at(5*time.Minute + 30*time.Second), err: errors.New("exit status 1")},
		{job: job{name: "e2e/webhook", tier: tierE2E}, err: errNotRun},
	}
	got := summary(results, began, at(9*time.Minute+2*time.Second), 2)
	want := `
test run: 9m02s, up to 2 jobs at a time

TIER    JOBS  FROM   TO     SPAN   JOB TIME  RESULT
tools   1     0m00s  0m05s  0m05s  0m05s     ok
verify  1     0m05s  0m45s  0m40s  0m40s     ok
unit    1     0m46s  4m00s  3m14s  3m14s     ok
e2e     3     0m45s  9m00s  8m15s  9m45s     FAILED: e2e/core, e2e/webhook (not run)

JOB           TIER    FROM   TO     TIME   RESULT
tools         tools   0m00s  0m05s  0m05s  ok
verify        verify  0m05s  0m45s  0m40s  ok
e2e/training  e2e     0m45s  9m00s  8m15s  ok
unit          unit    0m46s  4m00s  3m14s  ok
e2e/core      e2e     4m00s  5m30s  1m30s  FAILED
`
	if got != want {
		t.Errorf("summary =\n%s\nwant\n%s", got, want)
	}
}

func TestSummaryOfATierThatNeverRan(t *testing.T) {
	began := time.Now()
	got := summary([]result{
		{job: job{name: "verify", tier: tierVerify}, start: began, end: began.Add(time.Second), err: errors.New("exit status 2")},
		{job: job{name: "unit", tier: tierUnit}, err: errNotRun},
	}, began, began.Add(time.Second), 3)
	for _, want := range []string{"verify  1     0m00s  0m01s  0m01s  0m01s     FAILED: verify", "unit    1     -      -      -      -         FAILED: unit (not run)"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0m00s", 1500 * time.Millisecond: "0m02s", 7*time.Minute + 5*time.Second: "7m05s", 75 * time.Minute: "75m00s"} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
