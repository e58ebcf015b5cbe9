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
	// Checked counts, per invariant, the instances checked: workloads, or
	// for the quota and gpu invariants the stretches of held quota and
	// bound GPU pods seen.
	Checked map[string]int
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
			out = append(out, fmt.Sprintf("%s %s/%s (%s): %s", run.Name, run.Feature, run.Variant, run.Namespace, v))
		}
	}
	return out
}

// FeatureSummary is one row of the per-feature table.
type FeatureSummary struct {
	Feature    Feature
	Workloads  int
	AsExpected int
	// Violating counts the workloads with a violation; Violations all of
	// them.
	Violating, Violations int
}

// Features summarizes the runs per feature, in the order of AllFeatures.
func Features(runs []*WorkloadRun) []FeatureSummary {
	var out []FeatureSummary
	for _, f := range AllFeatures {
		s := FeatureSummary{Feature: f}
		for _, run := range runs {
			if run.Feature != f {
				continue
			}
			s.Workloads++
			if !run.Ended.IsZero() && run.Expected.admits(run.Observed) {
				s.AsExpected++
			}
			if len(run.Violations) > 0 {
				s.Violating++
			}
			s.Violations += len(run.Violations)
		}
		if s.Workloads > 0 {
			out = append(out, s)
		}
	}
	return out
}

// violationsOf counts the violations of invariant (the run-wide ones that
// belong to no workload count as the harness's).
func (rep *Report) violationsOf(invariant string) int {
	n := 0
	for _, run := range rep.Runs {
		for _, v := range run.Violations {
			if v.Invariant == invariant {
				n++
			}
		}
	}
	if invariant == InvariantHarness {
		n += len(rep.Global)
	}
	return n
}

// Table is the summary: one row per workload, the kills, one row per
// feature, one row per invariant, and the totals.
func (rep *Report) Table() string {
	var b strings.Builder
	start := rep.Start
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tFEATURE\tVARIANT\tSHAPE\tEXPECTED\tOBSERVED\tKILLS\tTOOK\tVIOLATIONS")
	for _, run := range rep.Runs {
		observed, took := "-", "-"
		if !run.Ended.IsZero() {
			observed = run.Observed.String()
			took = run.Ended.Sub(run.Created).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", run.Name, run.Feature, run.Variant, run.Shape(),
			run.Expected, observed, rep.killsDuring(run), took, violationList(run.Violations))
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

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tWORKLOADS\tENDED AS EXPECTED\tWITH VIOLATIONS\tVIOLATIONS")
	asExpected := 0
	for _, s := range Features(rep.Runs) {
		asExpected += s.AsExpected
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", s.Feature, s.Workloads, s.AsExpected, s.Violating, s.Violations)
	}
	_ = tw.Flush()

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INVARIANT\tCHECKED\tVIOLATIONS\tRULE")
	for _, inv := range AllInvariants {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", inv.Name, rep.Checked[inv.Name], rep.violationsOf(inv.Name), inv.Rule)
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

// violationList is a workload's violation count by invariant, e.g.
// "2 (end, gpu)".
func violationList(vs []Violation) string {
	if len(vs) == 0 {
		return "0"
	}
	var names []string
	for _, inv := range AllInvariants {
		for _, v := range vs {
			if v.Invariant == inv.Name {
				names = append(names, inv.Name)
				break
			}
		}
	}
	return fmt.Sprintf("%d (%s)", len(vs), strings.Join(names, ", "))
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
