package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
)

// The demo's Kueue queue: a ClusterQueue and a LocalQueue in the demo
// namespace, both demoQueue, whose GPU quota fits one of the queued samples
// (samples/trainjob-queued.yaml: 2 nodes x 4 GPUs each) at a time, so the
// second waits for the first to finish.
const (
	demoQueue     = "training"
	demoFlavor    = "gb200"
	demoQueueGPUs = 8
)

// demoQueues are the queue objects the demo creates.
func demoQueues() framework.KueueQueues {
	return framework.KueueQueues{
		ClusterQueue: demoQueue,
		Flavor:       framework.KueueFlavor{Name: demoFlavor},
		Quota:        corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(demoQueueGPUs, resource.DecimalSI)},
		Namespaces:   []string{demoNamespace},
	}
}

// startKueue starts Kueue detached, as a component of the demo's cluster
// (so `make demo-down` stops it), and creates the demo's queue.
func startKueue(ctx context.Context, env *framework.Env) (*framework.Kueue, error) {
	k, err := framework.StartKueueDetached(ctx, env, os.Stdout)
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, env.Client, demoNamespace); err != nil {
		return nil, err
	}
	if err := framework.CreateKueueQueues(ctx, env.Client, demoQueues()); err != nil {
		return nil, err
	}
	return k, nil
}

// The states of a TrainJob submitted to a Kueue queue, as its Workload says.
const (
	queueNoWorkload = "no Workload yet"
	queueQueued     = "queued"
	queueWaiting    = "waiting"
	queueAdmitted   = "admitted"
	queueFinished   = "finished"
)

// queuedRow is one TrainJob submitted to a Kueue queue, as Kueue sees it
// through the Workload it made for it.
type queuedRow struct {
	name, queue string
	state       string
	// clusterQueue admitted it; message is Kueue's while it waits for quota.
	clusterQueue, message string
	// waited is the time from the Workload's creation to its quota
	// reservation, once reserved.
	waited time.Duration
}

// queuedRowsOf summarises each TrainJob with the queue-name label from the
// Workload that Kueue's TrainJob integration made for it (the one it
// controls), sorted by name.
func queuedRowsOf(trainJobs []trainerv1alpha1.TrainJob, workloads []kueue.Workload) []queuedRow {
	byOwner := map[string]*kueue.Workload{}
	for i := range workloads {
		if owner := metav1.GetControllerOf(&workloads[i]); owner != nil {
			byOwner[string(owner.UID)] = &workloads[i]
		}
	}
	var rows []queuedRow
	for _, tj := range trainJobs {
		queue := tj.Labels[copsekueue.QueueNameLabel]
		if queue == "" {
			continue
		}
		r := queuedRow{name: tj.Name, queue: queue, state: queueNoWorkload}
		if wl, ok := byOwner[string(tj.UID)]; ok {
			r.state, r.clusterQueue, r.message, r.waited = workloadState(wl)
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

// workloadState reads a Workload's conditions: finished, admitted (with the
// ClusterQueue), waiting for quota (with Kueue's message), or queued before
// Kueue has looked at it; and how long it waited for its quota, once it has
// it.
func workloadState(wl *kueue.Workload) (state, clusterQueue, message string, waited time.Duration) {
	reserved := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	if reserved != nil && reserved.Status == metav1.ConditionTrue {
		waited = reserved.LastTransitionTime.Sub(wl.CreationTimestamp.Time)
	}
	if wl.Status.Admission != nil {
		clusterQueue = string(wl.Status.Admission.ClusterQueue)
	}
	switch {
	case meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished):
		return queueFinished, clusterQueue, "", waited
	case meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted):
		return queueAdmitted, clusterQueue, "", waited
	case reserved != nil && reserved.Status == metav1.ConditionFalse:
		return queueWaiting, "", reserved.Message, 0
	}
	return queueQueued, "", "", 0
}

// describe is what the queue table says of a row.
func (r queuedRow) describe() string {
	switch r.state {
	case queueWaiting:
		return fmt.Sprintf("waiting for quota (Kueue: %s)", r.message)
	case queueAdmitted:
		return fmt.Sprintf("admitted by ClusterQueue %s after %s, running", r.clusterQueue, r.waited.Round(time.Second))
	case queueFinished:
		return fmt.Sprintf("finished, quota released (admitted by ClusterQueue %s after %s)", r.clusterQueue, r.waited.Round(time.Second))
	}
	return r.state
}

// renderQueuedTable writes the queued TrainJobs as an aligned table.
func renderQueuedTable(w io.Writer, rows []queuedRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUED TRAINJOB\tQUEUE\tKUEUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.queue, r.describe())
	}
	_ = tw.Flush()
}

// queueWaits remembers, per queued TrainJob, what Kueue said the first time
// it made it wait: its Workload's message is gone once it is admitted, and
// the summary quotes it.
type queueWaits map[string]string

func (w queueWaits) record(rows []queuedRow) {
	for _, r := range rows {
		if _, seen := w[r.name]; !seen && r.state == queueWaiting {
			w[r.name] = r.message
		}
	}
}

// describeQueued is what the summary adds for a TrainJob that went through
// a Kueue queue.
func describeQueued(r queuedRow, waits queueWaits) string {
	var b strings.Builder
	fmt.Fprintf(&b, "queued in %s: ", r.queue)
	if message, waited := waits[r.name]; waited {
		fmt.Fprintf(&b, "waited for quota (Kueue: %s), ", message)
	}
	if r.clusterQueue == "" {
		b.WriteString(r.describe())
		return b.String()
	}
	fmt.Fprintf(&b, "admitted by ClusterQueue %s after %s", r.clusterQueue, r.waited.Round(time.Second))
	return b.String()
}
