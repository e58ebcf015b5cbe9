package framework

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
)

// PodSpec is a one-container pod that asks for gpus GPUs (none when 0). A
// 1s grace period keeps deletions quick on simulated nodes.
func PodSpec(gpus int64) corev1.PodSpec {
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers:                    []corev1.Container{{Name: "main", Image: "example.com/app:1"}},
	}
	if gpus > 0 {
		spec.Containers[0].Resources.Limits = corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return spec
}

// CliqueTemplate is a clique named name with replicas pods of spec.
func CliqueTemplate(name string, replicas int32, spec corev1.PodSpec) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: spec},
	}
}

// NewPodCliqueSet is an Inference PodCliqueSet of the given cliques.
func NewPodCliqueSet(namespace, name string, replicas int32, cliques ...*grovecorev1alpha1.PodCliqueTemplateSpec) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	pcs.Spec.Replicas = replicas
	pcs.Spec.Template.Cliques = cliques
	return pcs
}

// NewTrainingPodCliqueSet is a Training PodCliqueSet of the given cliques
// with a restart budget of maxRestarts.
func NewTrainingPodCliqueSet(namespace, name string, replicas, maxRestarts int32, cliques ...*grovecorev1alpha1.PodCliqueTemplateSpec) *copsev1alpha1.PodCliqueSet {
	pcs := NewPodCliqueSet(namespace, name, replicas, cliques...)
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To(maxRestarts)}
	return pcs
}

// NewTrainingWorkers is the suites' plain Training workload: replicas
// replicas of one clique "worker" of workers pods that run for runFor and
// exit 0 (runFor "" runs until deleted or made to exit, see MakePodExit),
// with a restart budget of maxRestarts.
func NewTrainingWorkers(namespace, name string, replicas, workers int32, runFor string, maxRestarts int32) *copsev1alpha1.PodCliqueSet {
	worker := CliqueTemplate("worker", workers, PodSpec(0))
	if runFor != "" {
		worker.Annotations = map[string]string{cluster.AnnotationRunDuration: runFor, cluster.AnnotationExitCode: "0"}
	}
	return NewTrainingPodCliqueSet(namespace, name, replicas, maxRestarts, worker)
}

// GetPodCliqueSet reads a PodCliqueSet, failing g when it cannot.
func (e *Env) GetPodCliqueSet(ctx context.Context, g gomega.Gomega, namespace, name string) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pcs)).To(gomega.Succeed())
	return pcs
}

// Pods lists every pod of a PodCliqueSet by label, terminating ones included.
func (e *Env) Pods(ctx context.Context, g gomega.Gomega, namespace, pcsName string, opts ...client.ListOption) []corev1.Pod {
	var pods corev1.PodList
	all := append([]client.ListOption{client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: pcsName}}, opts...)
	g.Expect(e.Client.List(ctx, &pods, all...)).To(gomega.Succeed())
	return pods.Items
}

// LivePods lists the pods of a PodCliqueSet that are not being deleted.
func (e *Env) LivePods(ctx context.Context, g gomega.Gomega, namespace, pcsName string, opts ...client.ListOption) []corev1.Pod {
	var live []corev1.Pod
	for _, p := range e.Pods(ctx, g, namespace, pcsName, opts...) {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live
}

// ReadyPods waits up to timeout until the PodCliqueSet has n live pods, all
// Ready, and returns them.
func (e *Env) ReadyPods(ctx context.Context, namespace, pcsName string, n int, timeout time.Duration) []corev1.Pod {
	ginkgo.GinkgoHelper()
	var pods []corev1.Pod
	gomega.Eventually(func(g gomega.Gomega) {
		pods = e.LivePods(ctx, g, namespace, pcsName)
		g.Expect(pods).To(gomega.HaveLen(n))
		for i := range pods {
			g.Expect(IsReady(&pods[i])).To(gomega.BeTrue(), "pod %s not ready", pods[i].Name)
		}
	}).WithContext(ctx).WithTimeout(timeout).Should(gomega.Succeed())
	return pods
}

// IsReady reports the pod's Ready condition.
func IsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IsTerminal reports whether the pod ended (Succeeded or Failed).
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// MakePodExit makes a running simulated pod exit with exitCode now: the
// simulated runtime ends a container run-duration after it started, so a
// 1ms run-duration on a running pod ends it at once.
func (e *Env) MakePodExit(ctx context.Context, pod *corev1.Pod, exitCode string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.PatchPodExit(ctx, pod, exitCode)).To(gomega.Succeed())
}

// PatchPodExit is MakePodExit returning the error instead of failing the
// spec, for goroutines that run outside a spec's assertions.
func (e *Env) PatchPodExit(ctx context.Context, pod *corev1.Pod, exitCode string) error {
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[cluster.AnnotationRunDuration] = "1ms"
	pod.Annotations[cluster.AnnotationExitCode] = exitCode
	if err := e.Client.Patch(ctx, pod, patch); err != nil {
		return fmt.Errorf("make pod %s/%s exit %s: %w", pod.Namespace, pod.Name, exitCode, err)
	}
	return nil
}

// EventsWithReason lists the events.k8s.io events of a namespace with reason.
func (e *Env) EventsWithReason(ctx context.Context, g gomega.Gomega, namespace, reason string) []eventsv1.Event {
	var events eventsv1.EventList
	g.Expect(e.Client.List(ctx, &events, client.InNamespace(namespace))).To(gomega.Succeed())
	var out []eventsv1.Event
	for _, ev := range events.Items {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// EvictPod asks the API server to evict pod through the Eviction API, as
// a node drain does: the API server marks it DisruptionTarget
// (EvictionByEvictionAPI) and deletes it with its grace period, after
// which the simulated kubelet ends it (exit 137).
func (e *Env) EvictPod(ctx context.Context, pod *corev1.Pod) {
	ginkgo.GinkgoHelper()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	gomega.Expect(e.Client.SubResource("eviction").Create(ctx, pod, eviction)).To(gomega.Succeed(), "evict pod %s/%s", pod.Namespace, pod.Name)
}
