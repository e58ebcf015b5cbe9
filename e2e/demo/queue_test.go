package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
)

const waitingMessage = "couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in flavor gb200, 8 more needed"

// queuedTrainJob is a TrainJob in the demo's queue (or none when queue is "").
func queuedTrainJob(name, queue string) trainerv1alpha1.TrainJob {
	tj := trainJob(name, time.Now(), nil, nil)
	tj.UID = types.UID("uid-" + name)
	if queue != "" {
		tj.Labels = map[string]string{copsekueue.QueueNameLabel: queue}
	}
	return tj
}

// workloadOf is Kueue's Workload of tj, created at created, with conditions.
func kueueWorkloadOf(tj trainerv1alpha1.TrainJob, created time.Time, admittedBy string, conditions ...metav1.Condition) kueue.Workload {
	wl := kueue.Workload{ObjectMeta: metav1.ObjectMeta{
		Name: "trainjob-" + tj.Name, CreationTimestamp: metav1.NewTime(created),
		OwnerReferences: []metav1.OwnerReference{{Kind: "TrainJob", Name: tj.Name, UID: tj.UID, Controller: ptr.To(true)}},
	}}
	wl.Status.Conditions = conditions
	if admittedBy != "" {
		wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(admittedBy)}
	}
	return wl
}

func condition(conditionType string, status metav1.ConditionStatus, at time.Time, message string) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: status, LastTransitionTime: metav1.NewTime(at), Message: message}
}

func TestQueuedRows(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	first, second, third := queuedTrainJob("sweep-a", "training"), queuedTrainJob("sweep-b", "training"), queuedTrainJob("sweep-c", "training")
	done, fresh, plain := queuedTrainJob("sweep-0", "training"), queuedTrainJob("sweep-d", "training"), queuedTrainJob("mnist", "")
	workloads := []kueue.Workload{
		kueueWorkloadOf(first, created, "training",
			condition(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, created.Add(time.Second), "Quota reserved in ClusterQueue training"),
			condition(kueue.WorkloadAdmitted, metav1.ConditionTrue, created.Add(time.Second), "The workload is admitted")),
		kueueWorkloadOf(second, created, "",
			condition(kueue.WorkloadQuotaReserved, metav1.ConditionFalse, created, waitingMessage)),
		kueueWorkloadOf(third, created, ""),
		kueueWorkloadOf(done, created, "training",
			condition(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, created.Add(14*time.Second), ""),
			condition(kueue.WorkloadAdmitted, metav1.ConditionTrue, created.Add(14*time.Second), ""),
			condition(kueue.WorkloadFinished, metav1.ConditionTrue, created.Add(25*time.Second), "jobset completed successfully")),
	}
	rows := queuedRowsOf([]trainerv1alpha1.TrainJob{third, plain, second, fresh, first, done}, workloads)
	got := map[string]string{}
	var names []string
	for _, r := range rows {
		got[r.name] = r.describe()
		names = append(names, r.name)
	}
	if strings.Join(names, ",") != "sweep-0,sweep-a,sweep-b,sweep-c,sweep-d" {
		t.Errorf("rows %v: want the queued TrainJobs only, by name", names)
	}
	for name, want := range map[string]string{
		"sweep-a": "admitted by ClusterQueue training after 1s, running",
		"sweep-b": "waiting for quota (Kueue: " + waitingMessage + ")",
		"sweep-c": "queued",
		"sweep-d": "no Workload yet",
		"sweep-0": "finished, quota released (admitted by ClusterQueue training after 14s)",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}

	var table strings.Builder
	renderQueuedTable(&table, rows)
	if !strings.Contains(table.String(), "QUEUED TRAINJOB") || !strings.Contains(table.String(), "sweep-b          training  waiting for quota") {
		t.Errorf("table:\n%s", table.String())
	}

	// The summary quotes what Kueue said while the TrainJob waited, which
	// its Workload no longer says once admitted.
	waits := queueWaits{}
	waits.record(rows)
	admittedLater := queuedRow{name: "sweep-b", queue: "training", state: queueFinished, clusterQueue: "training", waited: 12 * time.Second}
	waits.record([]queuedRow{admittedLater})
	want := "queued in training: waited for quota (Kueue: " + waitingMessage + "), admitted by ClusterQueue training after 12s"
	if got := describeQueued(admittedLater, waits); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := describeQueued(rows[1], waits); got != "queued in training: admitted by ClusterQueue training after 1s" {
		t.Errorf("summary of one admitted at once: %q", got)
	}
}
