package trainjob_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

const (
	// wait bounds what takes the controllers a few passes.
	wait = 90 * time.Second
	poll = 250 * time.Millisecond
	// simulationManager is the runtime patch that steers the simulated pods.
	simulationManager = "e2e.copse.dev/simulation"
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

// onTrainingRuntime points a TrainJob at a TrainingRuntime of its namespace.
func onTrainingRuntime(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	tj.Spec.RuntimeRef.Kind = ptr.To(trainerv1alpha1.TrainingRuntimeKind)
	return tj
}

// withPods adds the given annotations to the pods of one replicated job,
// through the TrainJob's simulation runtime patch.
func withPods(tj *trainerv1alpha1.TrainJob, job string, annotations map[string]string) {
	pod := simulationPatch(tj, job)
	if pod.Metadata == nil {
		pod.Metadata = &metav1.ObjectMeta{}
	}
	pod.Metadata.Annotations = annotations
}

// withGracePeriod makes the pods of one replicated job end this many
// seconds after their deletion (the simulated process ignores SIGTERM),
// instead of 30.
func withGracePeriod(tj *trainerv1alpha1.TrainJob, job string, seconds int64) {
	pod := simulationPatch(tj, job)
	if pod.Spec == nil {
		pod.Spec = &trainerv1alpha1.PodSpecPatch{}
	}
	pod.Spec.TerminationGracePeriodSeconds = &seconds
}

// simulationPatch is the pod template patch of one replicated job in the
// TrainJob's simulation runtime patch, added if missing.
func simulationPatch(tj *trainerv1alpha1.TrainJob, job string) *trainerv1alpha1.PodTemplatePatch {
	return framework.RuntimePatchPod(tj, simulationManager, job)
}

// simulate makes simulated containers run for runFor and exit with exitCode.
func simulate(runFor time.Duration, exitCode string) map[string]string {
	return map[string]string{cluster.AnnotationRunDuration: runFor.String(), cluster.AnnotationExitCode: exitCode}
}

// runtimeCopy is a TrainingRuntime in namespace with the spec of a runtime
// Kubeflow ships, whose Jobs fail at the first failed pod (backoffLimit 0)
// instead of after Kubernetes' six retries with back-off of minutes.
func runtimeCopy(namespace, shippedName string) *trainerv1alpha1.TrainingRuntime {
	GinkgoHelper()
	src, ok := shipped[shippedName]
	Expect(ok).To(BeTrue(), "Kubeflow ships no runtime %s", shippedName)
	rt := &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: shippedName},
		Spec:       *src.Spec.DeepCopy(),
	}
	failFast(&rt.Spec)
	return rt
}

func failFast(spec *trainerv1alpha1.TrainingRuntimeSpec) {
	for i := range spec.Template.Spec.ReplicatedJobs {
		job := &spec.Template.Spec.ReplicatedJobs[i].Template.Spec
		job.BackoffLimit = ptr.To[int32](0)
		job.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
}

// plainRuntime is a TrainingRuntime without an ML policy: one trainer job
// "node" of one container "node", failing at the first failed pod.
func plainRuntime(namespace, name string) *trainerv1alpha1.TrainingRuntime {
	rt := &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
					Name: trainjob.NodeName,
					Template: batchJobTemplate(map[string]string{trainjob.AncestorLabel: trainjob.AncestorTrainer},
						corev1.Container{Name: trainjob.NodeName, Image: "registry.example/plain-trainer:v1"}),
				}},
			}},
		},
	}
	failFast(&rt.Spec)
	return rt
}

func createRuntime(ctx context.Context, rt *trainerv1alpha1.TrainingRuntime) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, rt)).To(Succeed(), "TrainingRuntime %s", rt.Name)
}

func getTrainJob(ctx context.Context, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	got := &trainerv1alpha1.TrainJob{}
	ExpectWithOffset(1, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
	return got
}

func condition(tj *trainerv1alpha1.TrainJob, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(tj.Status.Conditions, conditionType)
}

// waitCondition waits until the TrainJob's condition is true and returns the
// TrainJob as it then was.
func waitCondition(ctx context.Context, tj *trainerv1alpha1.TrainJob, conditionType string, timeout time.Duration) *trainerv1alpha1.TrainJob {
	GinkgoHelper()
	var got *trainerv1alpha1.TrainJob
	Eventually(func(g Gomega) {
		got = &trainerv1alpha1.TrainJob{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, conditionType)).To(BeTrue(),
			"conditions: %v", got.Status.Conditions)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return got
}

func jobSetOf(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	js := &jobsetv1alpha2.JobSet{}
	return js, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), js)
}

// waitJobSet waits until the TrainJob's JobSet exists, controlled by it.
func waitJobSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) *jobsetv1alpha2.JobSet {
	GinkgoHelper()
	js := &jobsetv1alpha2.JobSet{}
	waitControlled(ctx, tj, js)
	return js
}

// waitControlled waits until the TrainJob's namesake of obj's kind exists,
// controlled by it, and reads it into obj.
func waitControlled(ctx context.Context, tj *trainerv1alpha1.TrainJob, obj client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)).To(Succeed())
		owner := getTrainJob(ctx, tj)
		g.Expect(metav1.IsControlledBy(obj, owner)).To(BeTrue(), "%T %s is not controlled by its TrainJob", obj, obj.GetName())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// expectGone waits until the object no longer exists.
func expectGone(ctx context.Context, obj client.Object, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound),
		"%T %s still exists", obj, obj.GetName())
}

func podsOf(ctx context.Context, tj *trainerv1alpha1.TrainJob) []corev1.Pod {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, env.Client.List(ctx, pods, client.InNamespace(tj.Namespace),
		client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: tj.Name})).To(Succeed())
	return pods.Items
}

// runningPods waits until the replicated job has n running, ready pods.
func runningPods(ctx context.Context, tj *trainerv1alpha1.TrainJob, job string, n int) []corev1.Pod {
	GinkgoHelper()
	var running []corev1.Pod
	Eventually(func(g Gomega) {
		running = nil
		for _, p := range podsOf(ctx, tj) {
			if p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] == job && p.Status.Phase == corev1.PodRunning && framework.IsReady(&p) {
				running = append(running, p)
			}
		}
		g.Expect(running).To(HaveLen(n), "running pods of %s", job)
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return running
}

// replicatedJob is the named replicated job of a JobSet.
func replicatedJob(g Gomega, js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == name {
			return &js.Spec.ReplicatedJobs[i]
		}
	}
	g.Expect(fmt.Errorf("JobSet %s has no replicated job %s", js.Name, name)).NotTo(HaveOccurred())
	return nil
}

// nodeContainer is the "node" container of a replicated job's pods.
func nodeContainer(g Gomega, rjob *jobsetv1alpha2.ReplicatedJob) *corev1.Container {
	containers := rjob.Template.Spec.Template.Spec.Containers
	for i := range containers {
		if containers[i].Name == trainjob.NodeName {
			return &containers[i]
		}
	}
	g.Expect(fmt.Errorf("replicated job %s has no node container", rjob.Name)).NotTo(HaveOccurred())
	return nil
}

// envOf maps a container's env by name.
func envOf(c *corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// haveValue matches an env var with a literal value.
func haveValue(value string) OmegaMatcher {
	return And(HaveField("Value", value), HaveField("ValueFrom", BeNil()))
}

// haveCompletionIndex matches an env var read from the pod's index in its
// indexed Job.
func haveCompletionIndex() OmegaMatcher {
	return HaveField("ValueFrom.FieldRef.FieldPath", trainjob.CompletionIndexFieldPath)
}

// podDNSName is the name a pod answers to in its JobSet's headless service.
func podDNSName(p *corev1.Pod) string {
	return p.Spec.Hostname + "." + p.Spec.Subdomain
}

func jobSetCondition(js *jobsetv1alpha2.JobSet, conditionType jobsetv1alpha2.JobSetConditionType) *metav1.Condition {
	return meta.FindStatusCondition(js.Status.Conditions, string(conditionType))
}

func resourceMust(q string) resource.Quantity { return resource.MustParse(q) }

// batchJobTemplate is a Job template with the given labels and one container.
func batchJobTemplate(labels map[string]string, container corev1.Container) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{container},
		}}},
	}
}

// withBackend makes a runtime build its TrainJobs into the given backend
// (spec.backend); the TrainJobs themselves are written the same way.
func withBackend(rt *trainerv1alpha1.TrainingRuntime, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainingRuntime {
	rt.Spec.Backend = backend
	return rt
}

func podCliqueSetOf(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*copsev1alpha1.PodCliqueSet, error) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	return pcs, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs)
}

// waitPodCliqueSet waits until the TrainJob's PodCliqueSet exists,
// controlled by it.
func waitPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) *copsev1alpha1.PodCliqueSet {
	GinkgoHelper()
	pcs := &copsev1alpha1.PodCliqueSet{}
	waitControlled(ctx, tj, pcs)
	return pcs
}

// cliquePodsOf are the pods of one clique (replicated job) of the
// TrainJob's PodCliqueSet, found by copse's labels.
func cliquePodsOf(ctx context.Context, tj *trainerv1alpha1.TrainJob, clique string) []corev1.Pod {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, env.Client.List(ctx, pods, client.InNamespace(tj.Namespace),
		client.MatchingLabels{labels.PartOfKey: tj.Name, labels.CliqueTemplateKey: clique})).To(Succeed())
	return pods.Items
}

// cliqueTemplate is the named clique of a PodCliqueSet.
func cliqueTemplate(g Gomega, pcs *copsev1alpha1.PodCliqueSet, name string) *grovecorev1alpha1.PodCliqueTemplateSpec {
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique.Name == name {
			return clique
		}
	}
	g.Expect(fmt.Errorf("PodCliqueSet %s has no clique %s", pcs.Name, name)).NotTo(HaveOccurred())
	return nil
}

// containerNamed is a container of a pod spec by name.
func containerNamed(g Gomega, spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	g.Expect(fmt.Errorf("pod spec has no container %s", name)).NotTo(HaveOccurred())
	return nil
}
