package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// row is one workload in the demo's progress table.
type row struct {
	name, workloadType, phase string
	restarts                  int32
	pending, running          int
	succeeded, failed         int
	reason                    string
}

// rowsOf summarises each PodCliqueSet and the pods labelled as its part.
func rowsOf(sets []copsev1alpha1.PodCliqueSet, pods []corev1.Pod) []row {
	byPCS := map[string][]corev1.Pod{}
	for _, p := range pods {
		byPCS[p.Labels[labels.PartOfKey]] = append(byPCS[p.Labels[labels.PartOfKey]], p)
	}
	rows := make([]row, 0, len(sets))
	for _, pcs := range sets {
		r := row{
			name:         pcs.Name,
			workloadType: string(pcs.Spec.WorkloadType),
			phase:        string(pcs.Status.Phase),
			restarts:     pcs.Status.RestartCount,
		}
		if r.phase == "" {
			r.phase = "-"
		}
		if c := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); c != nil && c.Status == "True" {
			r.reason = c.Reason
		}
		for _, p := range byPCS[pcs.Name] {
			switch {
			case p.Status.Phase == corev1.PodSucceeded:
				r.succeeded++
			case p.Status.Phase == corev1.PodFailed:
				r.failed++
			case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero():
				r.running++
			case p.DeletionTimestamp.IsZero():
				r.pending++
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].workloadType != rows[j].workloadType {
			return rows[i].workloadType > rows[j].workloadType // Training first
		}
		return rows[i].name < rows[j].name
	})
	return rows
}

// renderTable writes the rows as an aligned table.
func renderTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tTYPE\tPHASE\tRESTARTS\tPENDING\tRUNNING\tSUCCEEDED\tFAILED\tREASON")
	for _, r := range rows {
		reason := r.reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n",
			r.name, r.workloadType, r.phase, r.restarts, r.pending, r.running, r.succeeded, r.failed, reason)
	}
	_ = tw.Flush()
}

// trainingDone reports whether every Training workload reached a terminal phase.
func trainingDone(sets []copsev1alpha1.PodCliqueSet) bool {
	for _, pcs := range sets {
		if pcs.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining && !pcs.Status.Phase.IsTerminal() {
			return false
		}
	}
	return true
}

// tableString renders rows to a string, for comparisons and logs.
func tableString(rows []row) string {
	var b strings.Builder
	renderTable(&b, rows)
	return b.String()
}
