package chaos

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run did and found.
type Report struct {
	Config Config
	Plan   Plan
	Runs   []*WorkloadRun
	Kills  []KillRecord
	// Exits are the operator's ends the harness did not cause.
	Exits []Exit
	// Events counts the GREP-0285 events of all workloads by reason.
	Events map[string]int
	// Global are the violations of run-wide invariants.
	Global  []string
	Start   time.Time
	Elapsed time.Duration
}

func (rep *Report) violate(format string, args ...any) {
	rep.Global = append(rep.Global, fmt.Sprintf(format, args...))
}

// Violations lists every invariant that did not hold, each prefixed with
// its workload and namespace.
func (rep *Report) Violations() []string {
	out := append([]string(nil), rep.Global...)
	for _, run := range rep.Runs {
		for _, v := range run.Violations {
			out = append(out, fmt.Sprintf("%s (%s): %s", run.Name, run.Namespace, v))
		}
	}
	return out
}

// Table is the summary: one row per workload, the kills, and the totals.
func (rep *Report) Table() string {
	var b strings.Builder
	start := rep.Start
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tSCENARIO\tSHAPE\tINJECTED HISTORY\tEXPECTED\tOBSERVED\tKILLS\tTOOK\tVIOLATIONS")
	asExpected := 0
	for _, run := range rep.Runs {
		observed, took := "-", "-"
		if !run.Ended.IsZero() {
			observed = run.Observed.String()
			took = run.Ended.Sub(run.Created).Round(time.Second).String()
		}
		if run.Observed == run.Expected {
			asExpected++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\n", run.Name, run.Scenario, run.Shape(), run.History(),
			run.Expected, observed, rep.killsDuring(run), took, len(run.Violations))
	}
	_ = tw.Flush()

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KILL\tTRIGGER\tWORKLOAD\tCAUSE\tKILLED AT\tDOWN\tLEADING AT")
	for _, k := range rep.Kills {
		leading := "-"
		if !k.LeadingAt.IsZero() {
			leading = clock(start, k.LeadingAt)
		}
		fmt.Fprintf(tw, "%d\t%s\tw%02d\t%s\t%s\t%s\t%s\n", k.Index, k.Trigger, k.Workload, k.Cause, clock(start, k.KilledAt), k.Down, leading)
	}
	_ = tw.Flush()

	var events []string
	for _, reason := range EventReasons {
		events = append(events, fmt.Sprintf("%s=%d", reason, rep.Events[reason]))
	}
	lostLeases := 0
	for _, e := range rep.Exits {
		if e.LostLease {
			lostLeases++
		}
	}
	fmt.Fprintf(&b, "\nseed %d: %d workloads, %d ended as the oracle says; kills done %d of %d; "+
		"operator exits not planned %d (lost Lease %d); events %s; invariant violations %d; took %s\n",
		rep.Plan.Seed, len(rep.Runs), asExpected, rep.killsSucceeded(), len(rep.Plan.Kills), len(rep.Exits), lostLeases,
		strings.Join(events, " "), len(rep.Violations()), rep.Elapsed.Round(time.Second))
	return b.String()
}

// killsDuring counts the kills between the workload's creation and the
// moment its end was seen.
func (rep *Report) killsDuring(run *WorkloadRun) int {
	n := 0
	for _, k := range rep.Kills {
		if !run.Created.IsZero() && !k.KilledAt.Before(run.Created) && (run.Ended.IsZero() || !k.KilledAt.After(run.Ended)) {
			n++
		}
	}
	return n
}

func (rep *Report) killsSucceeded() int {
	n := 0
	for _, k := range rep.Kills {
		if k.Err == nil {
			n++
		}
	}
	return n
}
