package framework

import (
	"context"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// GPURuntimeName names the TrainingRuntime of GPURuntime.
const GPURuntimeName = "gpu"

// GPURuntime is a TrainingRuntime "gpu" of one trainer job "node" on the
// given backend, whose pods run until deleted; a TrainJob gives it its
// nodes and GPUs (GPUTrainJob).
func GPURuntime(namespace string, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainingRuntime {
	job := batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: trainjob.AncestorTrainer}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: trainjob.NodeName, Image: "registry.example/trainer:v1"}},
		}}},
	}
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: GPURuntimeName},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			Backend:  backend,
			MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: trainjob.NodeName, Template: job}},
			}},
		},
	}
}

// GPUTrainJob is a TrainJob on GPURuntime of nodes trainer nodes, each
// asking for gpus GPUs (none when 0).
func GPUTrainJob(namespace, name string, nodes int32, gpus int64) *trainerv1alpha1.TrainJob {
	tj := &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: GPURuntimeName, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To(nodes)},
		},
	}
	if gpus > 0 {
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
		}
	}
	return tj
}

// TrainJobPodSpecs are the pod specs of a TrainJob's pods: on the JobSet
// backend its JobSet's pod templates (there whether or not a JobSet
// controller runs), on the PodCliqueSet backend the pods copse made. It
// fails g while there are none.
func (e *Env) TrainJobPodSpecs(ctx context.Context, g gomega.Gomega, namespace, name string, backend trainerv1alpha1.RuntimeBackend) []corev1.PodSpec {
	var specs []corev1.PodSpec
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		pods := &corev1.PodList{}
		g.Expect(e.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: name})).To(gomega.Succeed())
		for _, p := range pods.Items {
			specs = append(specs, p.Spec)
		}
	} else {
		jobSet := &jobsetv1alpha2.JobSet{}
		g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, jobSet)).To(gomega.Succeed())
		for _, rjob := range jobSet.Spec.ReplicatedJobs {
			specs = append(specs, rjob.Template.Spec.Template.Spec)
		}
	}
	g.Expect(specs).NotTo(gomega.BeEmpty(), "pods of TrainJob %s", name)
	return specs
}
