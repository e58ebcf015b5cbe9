package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
)

const (
	// wait bounds what takes the controllers a few passes.
	wait = 90 * time.Second
	poll = 250 * time.Millisecond
)

// sdkTrainJob is a TrainJob shaped as the Kubeflow Python SDK creates one:
// runtimeRef by name, trainer numNodes, resourcesPerNode and command.
func sdkTrainJob(namespace, name, runtime string, nodes int32) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: runtime},
			Trainer: &trainerv1alpha1.Trainer{
				NumNodes: &nodes,
				Command:  []string{"bash", "-c", "torchrun train.py"},
				ResourcesPerNode: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("1")},
				},
			},
		},
	}
}

// runFor patches every pod of a TrainJob's runtime patch so that the
// simulated containers run for d and exit with code.
func withPods(tj *trainerv1alpha1.TrainJob, job string, annotations map[string]string) {
	tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, trainerv1alpha1.RuntimePatch{
		Manager: "e2e.copse.dev/simulation",
		TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
			Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
				Name: job,
				Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
					Template: &trainerv1alpha1.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: annotations}},
				}},
			}}},
		}},
	})
}

func simulate(runFor time.Duration, exitCode string) map[string]string {
	return map[string]string{cluster.AnnotationRunDuration: runFor.String(), cluster.AnnotationExitCode: exitCode}
}

func getTrainJob(ctx context.Context, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	got := &trainerv1alpha1.TrainJob{}
	ExpectWithOffset(1, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
	return got
}

func condition(tj *trainerv1alpha1.TrainJob, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(tj.Status.Conditions, conditionType)
}

func jobSetOf(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	js := &jobsetv1alpha2.JobSet{}
	return js, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), js)
}

func podsOf(ctx context.Context, tj *trainerv1alpha1.TrainJob) []corev1.Pod {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, env.Client.List(ctx, pods, client.InNamespace(tj.Namespace),
		client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: tj.Name})).To(Succeed())
	return pods.Items
}

func resourceMust(q string) resource.Quantity { return resource.MustParse(q) }
