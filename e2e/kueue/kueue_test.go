package kueue_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
)

var _ = Describe("Kueue", Label("kueue"), func() {
	It("suspends queued batch Jobs at admission and runs them one at a time within a quota of one", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "kueue-smoke")
		queues := framework.KueueQueues{
			ClusterQueue: ns,
			Flavor:       framework.KueueFlavor{Name: ns},
			Quota:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Namespaces:   []string{ns},
		}
		Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())

		By("creating two unsuspended Jobs of 1 cpu each in the queue: Kueue's webhook suspends both")
		jobs := []*batchv1.Job{queuedJob(ns, "first", queues.ClusterQueue), queuedJob(ns, "second", queues.ClusterQueue)}
		for _, job := range jobs {
			Expect(env.Client.Create(ctx, job)).To(Succeed())
			// The API server answers with the object as admitted.
			Expect(job.Spec.Suspend).To(Equal(ptr.To(true)), "Job %s was stored unsuspended: Kueue's webhook %s did not suspend it",
				job.Name, framework.KueueJobMutatingWebhook)
		}
		DeferCleanup(func(ctx context.Context) {
			for _, job := range jobs {
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
			}
			Expect(framework.DeleteKueueQueues(ctx, env.Client, queues)).To(Succeed())
		})

		By("Kueue admits one Job, whose pod runs; the other waits, suspended, for quota")
		var running, waiting *batchv1.Job
		Eventually(func(g Gomega) {
			running, waiting = nil, nil
			for _, job := range jobs {
				current := &batchv1.Job{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), current)).To(Succeed())
				if ptr.Deref(current.Spec.Suspend, false) {
					waiting = current
				} else {
					running = current
				}
			}
			g.Expect(running).NotTo(BeNil(), "no Job admitted yet")
			g.Expect(waiting).NotTo(BeNil(), "both Jobs run within a quota of one cpu")
			g.Expect(runningPods(ctx, g, running)).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			reserved := apimeta.FindStatusCondition(jobWorkload(ctx, g, waiting).Status.Conditions, kueue.WorkloadQuotaReserved)
			g.Expect(reserved).NotTo(BeNil())
			g.Expect(reserved.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(reserved.Message).To(ContainSubstring("insufficient unused quota for cpu"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			current := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(waiting), current)).To(Succeed())
			g.Expect(current.Spec.Suspend).To(Equal(ptr.To(true)))
			g.Expect(runningPods(ctx, g, current)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("the admitted Job's pod exits 0: the Job completes, Kueue releases its quota and admits the other")
		pods := runningPods(ctx, Default, running)
		env.MakePodExit(ctx, &pods[0], "0")
		Eventually(func(g Gomega) {
			finished := apimeta.FindStatusCondition(jobWorkload(ctx, g, running).Status.Conditions, kueue.WorkloadFinished)
			g.Expect(finished).NotTo(BeNil())
			g.Expect(finished.Status).To(Equal(metav1.ConditionTrue))
			current := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(waiting), current)).To(Succeed())
			g.Expect(current.Spec.Suspend).To(Equal(ptr.To(false)))
			g.Expect(runningPods(ctx, g, current)).To(HaveLen(1))
			admitted := apimeta.FindStatusCondition(jobWorkload(ctx, g, current).Status.Conditions, kueue.WorkloadAdmitted)
			g.Expect(admitted).NotTo(BeNil())
			g.Expect(admitted.Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})

// queuedJob is a Job of one pod asking for 1 cpu, submitted to the
// LocalQueue queue, and not suspended by its author: its pod runs until it
// is told to exit (Env.MakePodExit).
func queuedJob(namespace, name, queue string) *batchv1.Job {
	spec := framework.PodSpec(0)
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{copsekueue.QueueNameLabel: queue}},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{Spec: spec},
		},
	}
}

// runningPods are the Running pods of job.
func runningPods(ctx context.Context, g Gomega, job *batchv1.Job) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name})).To(Succeed())
	var running []corev1.Pod
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	return running
}

// jobWorkload is the Kueue Workload Kueue created for job: the one job
// controls.
func jobWorkload(ctx context.Context, g Gomega, job *batchv1.Job) *kueue.Workload {
	var workloads kueue.WorkloadList
	g.Expect(env.Client.List(ctx, &workloads, client.InNamespace(job.Namespace))).To(Succeed())
	var found *kueue.Workload
	for i := range workloads.Items {
		if owner := metav1.GetControllerOf(&workloads.Items[i]); owner != nil && owner.UID == job.UID {
			found = &workloads.Items[i]
		}
	}
	g.Expect(found).NotTo(BeNil(), "no Workload for Job %s", job.Name)
	return found
}
