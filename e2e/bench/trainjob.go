package bench

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

var trainJobGVR = trainerv1alpha1.SchemeGroupVersion.WithResource("trainjobs")

// trainJobRuntimeName names the TrainingRuntime of the trainjob-restart
// scenario, one per namespace (so one per backend).
const trainJobRuntimeName = "torch-bench"

// trainJobRuntime is a torch runtime as Kubeflow ships it, reduced to what
// the benchmark needs: one trainer job "node" of n pods whose Job fails at
// the first failed pod (backoffLimit 0, restartPolicy Never), restarted
// whole at most maxRestarts times, built into backend.
func trainJobRuntime(namespace string, n, maxRestarts int32, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainingRuntime {
	spec := framework.PodSpec(0)
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.Containers[0].Name = trainjob.NodeName
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: trainJobRuntimeName},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			Backend:  backend,
			MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To(n), Torch: &trainerv1alpha1.TorchMLPolicySource{}},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				FailurePolicy: &jobsetv1alpha2.FailurePolicy{MaxRestarts: maxRestarts},
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
					Name:     trainjob.NodeName,
					Replicas: 1,
					Template: batchv1.JobTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: trainjob.AncestorTrainer}},
						Spec: batchv1.JobSpec{
							BackoffLimit: ptr.To[int32](0),
							Template:     corev1.PodTemplateSpec{Spec: spec},
						},
					},
				}},
			}},
		},
	}
}

// trainJobOn is a TrainJob of n nodes on the namespace's benchmark runtime.
func trainJobOn(namespace, name string, n int32) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: trainJobRuntimeName, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To(n)},
		},
	}
}

// restartTrainJob: a TrainJob of n torch nodes with maxRestarts 1 on the
// given backend; one pod exits 1; the backend restarts the TrainJob. The
// JobSet backend's attempts are JobSet's restart attempts and its Jobs are
// recreated; the PodCliqueSet backend's are copse's attempts and its
// PodCliques are recreated.
func (b *Bench) restartTrainJob(ctx context.Context, rep, n int, backend trainerv1alpha1.RuntimeBackend) Run {
	system, prefix, attemptKey := SystemTrainJobPodCliqueSet, "bench-trainjob-pcs", labels.AttemptKey
	if backend == trainerv1alpha1.RuntimeBackendJobSet {
		system, prefix, attemptKey = SystemTrainJobJobSet, "bench-trainjob-jobset", LabelJobSetRestartAttempt
	}
	run := Run{Scenario: ScenarioTrainJobRestart, System: system, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, prefix, func(ctx context.Context, ns string) error {
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		childGVR := pclqGVR
		if backend == trainerv1alpha1.RuntimeBackendJobSet {
			childGVR = jobGVR
		}
		children, err := trackObjects(ctx, b.dyn, childGVR, ns)
		if err != nil {
			return err
		}
		rt := trainJobRuntime(ns, int32(n), 1, backend)
		if err := b.env.Client.Create(ctx, rt); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create TrainingRuntime: %w", err)
		}
		if err := b.env.Client.Create(ctx, trainJobOn(ns, b.nextName(), int32(n))); err != nil {
			return fmt.Errorf("create TrainJob: %w", err)
		}
		return b.restartMeasure(ctx, &run, ns, pods, children, n, attemptKey, func() error {
			waitQuiet(ctx, pods, children)
			return nil
		})
	})
	return b.record(run, err)
}
