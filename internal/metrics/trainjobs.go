package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

var trainJobsDesc = prometheus.NewDesc("copse_trainjobs",
	"TrainJobs copse manages, by namespace, the backend their runtime builds them into (JobSet, PodCliqueSet; Unknown while "+
		"the runtime is missing) and state (Complete, Failed, Suspended, Active).",
	[]string{"namespace", "backend", "state"}, nil)

// The states copse_trainjobs counts, from the TrainJob's conditions.
const (
	trainJobActive = "Active"
	backendUnknown = "Unknown"
)

// collectTrainJobs reports copse_trainjobs from the cache.
func collectTrainJobs(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) {
	var jobs trainerv1alpha1.TrainJobList
	var runtimes trainerv1alpha1.TrainingRuntimeList
	var clusterRuntimes trainerv1alpha1.ClusterTrainingRuntimeList
	if reader.List(ctx, &jobs, readOnly) != nil || reader.List(ctx, &runtimes, readOnly) != nil || reader.List(ctx, &clusterRuntimes, readOnly) != nil {
		return
	}
	for key, n := range countTrainJobs(jobs.Items, runtimes.Items, clusterRuntimes.Items) {
		ch <- prometheus.MustNewConstMetric(trainJobsDesc, prometheus.GaugeValue, float64(n), key[0], key[1], key[2])
	}
}

// countTrainJobs counts the TrainJobs copse reconciles (spec.managedBy
// unset or the TrainJob controller's) by namespace, backend and state.
func countTrainJobs(jobs []trainerv1alpha1.TrainJob, runtimes []trainerv1alpha1.TrainingRuntime,
	clusterRuntimes []trainerv1alpha1.ClusterTrainingRuntime) map[[3]string]int {
	backends := map[[3]string]trainerv1alpha1.RuntimeBackend{} // kind, namespace, name -> backend
	for i := range runtimes {
		backends[[3]string{trainerv1alpha1.TrainingRuntimeKind, runtimes[i].Namespace, runtimes[i].Name}] = trainjob.BackendOf(&runtimes[i].Spec)
	}
	for i := range clusterRuntimes {
		backends[[3]string{trainerv1alpha1.ClusterTrainingRuntimeKind, "", clusterRuntimes[i].Name}] = trainjob.BackendOf(&clusterRuntimes[i].Spec)
	}
	out := map[[3]string]int{}
	for i := range jobs {
		job := &jobs[i]
		if ptr.Deref(job.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) != trainerv1alpha1.ManagedByTrainJobController {
			continue // another controller's, such as MultiKueue's
		}
		kind, namespace := trainerv1alpha1.ClusterTrainingRuntimeKind, ""
		if job.Spec.RuntimeRef.Kind != nil && *job.Spec.RuntimeRef.Kind == trainerv1alpha1.TrainingRuntimeKind {
			kind, namespace = trainerv1alpha1.TrainingRuntimeKind, job.Namespace
		}
		backend := backendUnknown
		if b, ok := backends[[3]string{kind, namespace, job.Spec.RuntimeRef.Name}]; ok {
			backend = string(b)
		}
		out[[3]string{job.Namespace, backend, trainJobState(job)}]++
	}
	return out
}

func trainJobState(job *trainerv1alpha1.TrainJob) string {
	for _, state := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobSuspended} {
		if meta.IsStatusConditionTrue(job.Status.Conditions, state) {
			return state
		}
	}
	return trainJobActive
}
