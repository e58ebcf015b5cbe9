package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// summary is the table the run ends with: per tier, when its first job
// started and its last ended (tiers overlap: they share the machine), the
// sum of its jobs' times and which failed; then every job in start order.
// Times are from the start of the run.
func summary(results []result, began, ended time.Time, parallel int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\ntest run: %s, up to %d jobs at a time\n\n", formatDuration(ended.Sub(began)), parallel)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tJOBS\tFROM\tTO\tSPAN\tJOB TIME\tRESULT")
	for _, tier := range allTiers {
		var jobs []result
		for _, r := range results {
			if r.job.tier == tier {
				jobs = append(jobs, r)
			}
		}
		if len(jobs) == 0 {
			continue
		}
		from, to, busy, ran := time.Time{}, time.Time{}, time.Duration(0), 0
		var failed, skipped []string
		for _, r := range jobs {
			if errors.Is(r.err, errNotRun) {
				failed = append(failed, r.job.name+" (not run)")
				continue
			}
			ran++
			if from.IsZero() || r.start.Before(from) {
				from = r.start
			}
			if r.end.After(to) {
				to = r.end
			}
			busy += r.duration()
			if r.err != nil {
				failed = append(failed, r.job.name)
			}
			if r.err == nil && r.skipped != "" {
				skipped = append(skipped, r.job.name)
			}
		}
		outcome := "ok"
		if len(failed) > 0 {
			outcome = "FAILED: " + strings.Join(failed, ", ")
		}
		if len(skipped) > 0 {
			outcome += "; SKIPPED: " + strings.Join(skipped, ", ")
		}
		if ran == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t%s\n", tier, len(jobs), outcome)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", tier, len(jobs),
			formatDuration(from.Sub(began)), formatDuration(to.Sub(began)), formatDuration(to.Sub(from)), formatDuration(busy), outcome)
	}
	_ = tw.Flush()

	ran := slices.DeleteFunc(slices.Clone(results), func(r result) bool { return errors.Is(r.err, errNotRun) })
	slices.SortStableFunc(ran, func(a, b result) int { return a.start.Compare(b.start) })
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTIER\tFROM\tTO\tTIME\tRESULT")
	for _, r := range ran {
		outcome := r.outcome()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.job.name, r.job.tier,
			formatDuration(r.start.Sub(began)), formatDuration(r.end.Sub(began)), formatDuration(r.duration()), outcome)
	}
	_ = tw.Flush()
	return b.String()
}

// formatDuration is minutes and seconds: "7m05s".
func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}
