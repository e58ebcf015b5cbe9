package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// stopGrace is how long an interrupted job gets after SIGTERM.
const stopGrace = 30 * time.Second

// result is how a job went.
type result struct {
	job        job
	start, end time.Time
	// err is nil when the job passed; errNotRun when an earlier stage
	// failed or the run was interrupted before it started.
	err     error
	logPath string
	// skipped is why a job that passed ran nothing (process.SkipMarker in
	// its log): the summary reports it as skipped, not as ok.
	skipped string
}

var errNotRun = errors.New("not run")

func (r result) duration() time.Duration { return r.end.Sub(r.start) }

// outcome is how the job went in a word or two: ok, SKIPPED (why), FAILED.
func (r result) outcome() string {
	switch {
	case r.err != nil:
		return "FAILED"
	case r.skipped != "":
		return "SKIPPED (" + r.skipped + ")"
	default:
		return "ok"
	}
}

// runner runs stages of jobs, parallel at a time, each with its output in a
// log file of its own, and reports to out: a line when a job starts, and
// when it ends its whole log followed by a line saying how it went, so that
// the output of parallel jobs never interleaves.
type runner struct {
	parallel int
	logDir   string
	out      io.Writer
	began    time.Time
	// progressEvery is how often a line lists the jobs still running.
	progressEvery time.Duration

	mu sync.Mutex // serialises writes to out
}

// runStage runs jobs in order, at most parallel at a time, and returns
// their results in the same order. When ctx ends, running jobs are stopped
// and the others are not started.
func (r *runner) runStage(ctx context.Context, jobs []job) []result {
	results := make([]result, len(jobs))
	for i, j := range jobs {
		results[i] = result{job: j, err: errNotRun}
	}
	slots := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	running := newRunningSet()
	stopProgress := r.reportProgress(running)
	defer stopProgress()
	for i := range jobs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			running.add(jobs[i].name)
			defer running.remove(jobs[i].name)
			results[i] = r.run(ctx, jobs[i])
		}()
	}
	wg.Wait()
	return results
}

// run runs one job to its end, or until ctx ends.
func (r *runner) run(ctx context.Context, j job) result {
	res := result{job: j, start: time.Now(), logPath: filepath.Join(r.logDir, logName(j.name))}
	r.printf("[%s] start %s: %s\n", r.since(res.start), j.name, strings.Join(j.argv, " "))
	p, err := process.Start(process.Spec{Name: j.name, Binary: j.argv[0], Args: j.argv[1:], LogPath: res.logPath})
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			_ = p.Stop(stopGrace)
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	res.end, res.err = time.Now(), err
	if err == nil {
		if log, rerr := os.ReadFile(res.logPath); rerr == nil {
			res.skipped = process.SkipReason(string(log))
		}
	}
	r.report(res)
	return res
}

// report writes the job's log and the line that says how it went.
func (r *runner) report(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, err := os.Open(res.logPath); err == nil {
		_, _ = io.Copy(r.out, f)
		_ = f.Close()
	}
	outcome := res.outcome()
	if res.err != nil {
		outcome = "FAILED (" + res.err.Error() + ")"
	}
	fmt.Fprintf(r.out, "[%s] %s %s in %s (log: %s)\n", r.since(res.end), outcome, res.job.name, formatDuration(res.duration()), res.logPath)
}

// reportProgress prints the running jobs every progressEvery, until the
// returned function is called.
func (r *runner) reportProgress(running *runningSet) (stop func()) {
	if r.progressEvery <= 0 {
		return func() {}
	}
	ticker := time.NewTicker(r.progressEvery)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case now := <-ticker.C:
				if names := running.list(now); names != "" {
					r.printf("[%s] running: %s\n", r.since(now), names)
				}
			}
		}
	}()
	return func() { ticker.Stop(); close(done) }
}

func (r *runner) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format, args...)
}

// since is the time since the run began, as the progress lines show it.
func (r *runner) since(t time.Time) string { return formatDuration(t.Sub(r.began)) }

// logName is the log file of a job: its name with slashes as dashes.
func logName(name string) string { return strings.ReplaceAll(name, "/", "-") + ".log" }

// runningSet is the jobs running now and since when.
type runningSet struct {
	mu    sync.Mutex
	since map[string]time.Time
	order []string
}

func newRunningSet() *runningSet { return &runningSet{since: map[string]time.Time{}} }

func (s *runningSet) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since[name] = time.Now()
	s.order = append(s.order, name)
}

func (s *runningSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, name)
	for i, n := range s.order {
		if n == name {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// list is "name (time), ..." of the running jobs at now.
func (s *runningSet) list(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := make([]string, 0, len(s.order))
	for _, n := range s.order {
		parts = append(parts, fmt.Sprintf("%s (%s)", n, formatDuration(now.Sub(s.since[n]))))
	}
	return strings.Join(parts, ", ")
}
