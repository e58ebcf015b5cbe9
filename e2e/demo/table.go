package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// view is what the demo shows: the PodCliqueSets, then the TrainJobs, then
// what Kueue says of the TrainJobs submitted to a queue.
type view struct {
	workloads []row
	trainJobs []trainJobRow
	queued    []queuedRow
}

// row is one workload in the demo's progress table.
type row struct {
	name, workloadType, phase string
	restarts                  int32
	pending, running          int
	succeeded, failed         int
	reason                    string
}

// trainJobRow is one TrainJob in the demo's progress table.
type trainJobRow struct {
	name, state, runtime string
	// nodes is status.numNodes, nil until copse resolved the runtime.
	nodes *int32
	// jobs summarises status.jobsStatus, the JobSet's replicated jobs.
	jobs string
	// reason and message are the terminal condition's, the JobSet's.
	reason, message string
	created         time.Time
}

// The states the TrainJob table shows: the true condition (Complete, Failed,
// Suspended), else Running once a Job of the JobSet is active, else Created.
// A running TrainJob has no condition of its own; the last two are the
// demo's words for that.
const (
	trainJobCreated = "Created"
	trainJobRunning = "Running"
)

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

// trainJobRowsOf summarises each TrainJob from its status, sorted by name.
func trainJobRowsOf(trainJobs []trainerv1alpha1.TrainJob) []trainJobRow {
	rows := make([]trainJobRow, 0, len(trainJobs))
	for _, tj := range trainJobs {
		r := trainJobRow{
			name:    tj.Name,
			state:   trainJobState(tj.Status),
			runtime: tj.Spec.RuntimeRef.Name,
			nodes:   tj.Status.NumNodes,
			jobs:    jobsSummary(tj.Status.JobsStatus),
			created: tj.CreationTimestamp.Time,
		}
		if c := meta.FindStatusCondition(tj.Status.Conditions, r.state); c != nil && r.state != trainerv1alpha1.TrainJobSuspended {
			r.reason, r.message = c.Reason, c.Message
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

// trainJobState: a terminal condition first (it is final), then a
// suspension, then whether the JobSet has an active Job.
func trainJobState(status trainerv1alpha1.TrainJobStatus) string {
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobSuspended} {
		if meta.IsStatusConditionTrue(status.Conditions, t) {
			return t
		}
	}
	for _, job := range status.JobsStatus {
		if deref(job.Active) > 0 {
			return trainJobRunning
		}
	}
	return trainJobCreated
}

// jobsSummary writes each replicated job's non-zero Job counts, e.g.
// "node: 1 succeeded"; "-" before the JobSet reported any.
func jobsSummary(jobs []trainerv1alpha1.JobStatus) string {
	if len(jobs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(jobs))
	for _, job := range jobs {
		var counts []string
		for _, c := range []struct {
			n     *int32
			label string
		}{{job.Active, "active"}, {job.Ready, "ready"}, {job.Succeeded, "succeeded"}, {job.Failed, "failed"}, {job.Suspended, "suspended"}} {
			if deref(c.n) > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", deref(c.n), c.label))
			}
		}
		if len(counts) == 0 {
			counts = []string{"-"}
		}
		parts = append(parts, job.Name+": "+strings.Join(counts, ", "))
	}
	return strings.Join(parts, "; ")
}

func deref(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}

// renderTable writes the workloads as an aligned table.
func renderTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tTYPE\tPHASE\tRESTARTS\tPENDING\tRUNNING\tSUCCEEDED\tFAILED\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n",
			r.name, r.workloadType, r.phase, r.restarts, r.pending, r.running, r.succeeded, r.failed, orDash(r.reason))
	}
	_ = tw.Flush()
}

// renderTrainJobTable writes the TrainJobs as an aligned table, their ages
// as kubectl writes them.
func renderTrainJobTable(w io.Writer, rows []trainJobRow, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRAINJOB\tSTATE\tRUNTIME\tNODES\tJOBS\tREASON\tAGE")
	for _, r := range rows {
		nodes := "-"
		if r.nodes != nil {
			nodes = fmt.Sprint(*r.nodes)
		}
		age := "-"
		if !r.created.IsZero() {
			age = duration.HumanDuration(now.Sub(r.created))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.state, r.runtime, nodes, r.jobs, orDash(r.reason), age)
	}
	_ = tw.Flush()
}

// render writes the workload table and, when there are TrainJobs, theirs
// below it, and below that the queued ones' admission.
func (v view) render(now time.Time) string {
	var b strings.Builder
	renderTable(&b, v.workloads)
	if len(v.trainJobs) > 0 {
		b.WriteString("\n")
		renderTrainJobTable(&b, v.trainJobs, now)
	}
	if len(v.queued) > 0 {
		b.WriteString("\n")
		renderQueuedTable(&b, v.queued)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// samplesEnded reports whether every applied PodCliqueSet and TrainJob is
// listed and has ended: Training workloads in a terminal phase, TrainJobs
// Complete or Failed. Inference workloads never end; being listed is enough.
func samplesEnded(applied []appliedObject, sets []copsev1alpha1.PodCliqueSet, trainJobs []trainerv1alpha1.TrainJob) bool {
	setsByName := map[string]copsev1alpha1.PodCliqueSet{}
	for _, pcs := range sets {
		setsByName[pcs.Name] = pcs
	}
	trainJobsByName := map[string]trainerv1alpha1.TrainJob{}
	for _, tj := range trainJobs {
		trainJobsByName[tj.Name] = tj
	}
	for _, obj := range applied {
		switch obj.kind {
		case kindPodCliqueSet:
			pcs, ok := setsByName[obj.name]
			if !ok || (pcs.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining && !pcs.Status.Phase.IsTerminal()) {
				return false
			}
		case kindTrainJob:
			tj, ok := trainJobsByName[obj.name]
			if !ok || !trainJobFinished(tj.Status) {
				return false
			}
		}
	}
	return true
}

func trainJobFinished(status trainerv1alpha1.TrainJobStatus) bool {
	return meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobComplete) ||
		meta.IsStatusConditionTrue(status.Conditions, trainerv1alpha1.TrainJobFailed)
}

// summary says, per applied object in the order the demo applied them,
// which sample it came from and what it did, from the last view and, for
// the queued TrainJobs, what Kueue said while they waited.
func summary(applied []appliedObject, v view, waits queueWaits) string {
	workloads := map[string]row{}
	for _, r := range v.workloads {
		workloads[r.name] = r
	}
	queued := map[string]queuedRow{}
	for _, r := range v.queued {
		queued[r.name] = r
	}
	trainJobs := map[string]trainJobRow{}
	runtimeUsers := map[string]int{}
	for _, r := range v.trainJobs {
		trainJobs[r.name] = r
		runtimeUsers[r.runtime]++
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SAMPLE\tOBJECT\tWHAT IT DID")
	for _, obj := range applied {
		var did string
		switch obj.kind {
		case kindPodCliqueSet:
			r, ok := workloads[obj.name]
			did = "not found"
			if ok {
				did = describeWorkload(r)
			}
		case kindTrainJob:
			r, ok := trainJobs[obj.name]
			did = "not found"
			if ok {
				did = describeTrainJob(r)
			}
			if q, ok := queued[obj.name]; ok {
				did += "; " + describeQueued(q, waits)
			}
		case kindClusterTrainingRuntime, kindTrainingRuntime:
			did = fmt.Sprintf("runtime of %s", plural(runtimeUsers[obj.name], "TrainJob"))
		default:
			did = "applied"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\n", obj.file, obj.kind, obj.name, did)
	}
	_ = tw.Flush()
	return b.String()
}

func describeWorkload(r row) string {
	pods := fmt.Sprintf("pods: %d succeeded, %d failed, %d running, %d pending", r.succeeded, r.failed, r.running, r.pending)
	switch {
	case r.workloadType != string(copsev1alpha1.WorkloadTypeTraining):
		return fmt.Sprintf("%s %s, serving until deleted (%s)", r.workloadType, r.phase, pods)
	case r.reason != "":
		return fmt.Sprintf("Training %s: %s after %s (%s)", r.phase, r.reason, plural(int(r.restarts), "restart"), pods)
	default:
		return fmt.Sprintf("Training %s with %s (%s)", r.phase, plural(int(r.restarts), "restart"), pods)
	}
}

func describeTrainJob(r trainJobRow) string {
	nodes := "nodes not resolved"
	if r.nodes != nil {
		nodes = plural(int(*r.nodes), "node")
	}
	out := fmt.Sprintf("%s on %s, %s", r.state, r.runtime, nodes)
	if r.reason != "" {
		out += ": " + r.reason
		if r.message != "" {
			out += " (" + r.message + ")"
		}
	}
	return out + "; jobs " + r.jobs
}

func plural(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun
	case 1:
		return "1 " + noun
	default:
		return fmt.Sprintf("%d %ss", n, noun)
	}
}

// newView builds the view from what the demo listed.
func newView(sets []copsev1alpha1.PodCliqueSet, pods []corev1.Pod, trainJobs []trainerv1alpha1.TrainJob, workloads []kueue.Workload) view {
	return view{workloads: rowsOf(sets, pods), trainJobs: trainJobRowsOf(trainJobs), queued: queuedRowsOf(trainJobs, workloads)}
}
