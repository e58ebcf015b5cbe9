package kueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The acceptance scenario: one ClusterQueue of 8 GPUs shared by
// every kind of workload copse runs, each of 4 GPUs, with the operator
// SIGKILLed while Kueue preempts.
const (
	sharedGPUs    = 8
	workloadGPUs  = 4
	sharedWait    = 3 * time.Minute
	sharedSampler = 100 * time.Millisecond
)

var _ = Describe("One GPU quota shared by TrainJobs on both backends and PodCliqueSets", Label("kueue"), func() {
	It("runs two 4-GPU workloads of three in 8 GPUs, holds the third suspended without pods until one finishes, "+
		"lets a higher priority preempt a Training PodCliqueSet without spending its restart budget while the operator is SIGKILLed, "+
		"keeps an Inference PodCliqueSet running, and never admits more than the quota", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "kueue-shared")
		queues := framework.KueueQueues{
			ClusterQueue: ns,
			Flavor:       framework.KueueFlavor{Name: ns, NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok}},
			Quota:        corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(sharedGPUs, resource.DecimalSI)},
			// The PodCliqueSet "train" is the lowest: the preemptor evicts
			// it rather than the TrainJob still running.
			PreemptLowerPriority: true,
			Namespaces:           []string{ns},
			PriorityClasses:      map[string]int32{ns + "-low": 10, ns + "-mid": 100, ns + "-high": 1000},
		}
		Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { releaseQueues(ctx, ns, queues, sharedWait) })
		for _, backend := range []trainerv1alpha1.RuntimeBackend{trainerv1alpha1.RuntimeBackendJobSet, trainerv1alpha1.RuntimeBackendPodCliqueSet} {
			Expect(env.Client.Create(ctx, gpuRuntime(ns, backend))).To(Succeed())
		}

		By("sampling, for the whole spec, the GPUs Kueue has reserved and the GPUs of pods that have not ended")
		sampler := startQuotaSampler(ctx, ns)
		DeferCleanup(func() { sampler.cancel(); <-sampler.done })

		By("submitting a TrainJob on each backend, then a Training PodCliqueSet: the first two run, the third waits suspended without pods")
		onJobSet := gpuTrainJob(ns, "tj-jobset", ns, ns+"-mid", trainerv1alpha1.RuntimeBackendJobSet)
		onPCS := gpuTrainJob(ns, "tj-pcs", ns, ns+"-mid", trainerv1alpha1.RuntimeBackendPodCliqueSet)
		Expect(env.Client.Create(ctx, onJobSet)).To(Succeed())
		Expect(env.Client.Create(ctx, onPCS)).To(Succeed())
		jobSetPods := runningGPUPods(ctx, ns, client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: onJobSet.Name}, 1)
		pcsBackendPods := runningGPUPods(ctx, ns, client.MatchingLabels{labels.PartOfKey: onPCS.Name}, 1)
		train := gpuPCS(ns, "train", ns, ns+"-low", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, train)).To(Succeed())
		expectAdmitted(ctx, ns, train.Name, metav1.ConditionFalse, copsev1alpha1.ReasonPending, "insufficient unused quota for nvidia.com/gpu")
		Consistently(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, train.Name).IsSuspended()).To(BeTrue())
			g.Expect(env.Pods(ctx, g, ns, train.Name)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("the JobSet-backend TrainJob completes: the PodCliqueSet is admitted and runs")
		env.MakePodExit(ctx, &jobSetPods[0], "0")
		tjWaitComplete(ctx, onJobSet)
		trainPods := runningGPUPods(ctx, ns, client.MatchingLabels{labels.PartOfKey: train.Name}, 1)
		expectAdmitted(ctx, ns, train.Name, metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted, "")
		trainWorkload := workloadOf(ctx, Default, ns, train.Name)

		By("submitting a higher-priority PodCliqueSet and SIGKILLing the operator once its Workload exists: Kueue evicts the Training PodCliqueSet while no operator runs")
		urgent := gpuPCS(ns, "urgent", ns, ns+"-high", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, urgent)).To(Succeed())
		Eventually(func(g Gomega) { workloadOf(ctx, g, ns, urgent.Name) }).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())
		Expect(env.Operator.Kill()).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(workloadCondition(workloadOf(ctx, g, ns, train.Name), kueue.WorkloadEvicted)).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("the restarted operator suspends the evicted PodCliqueSet: every pod gone, its budget untouched, its Workload requeued")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, train.Name)
			g.Expect(pcs.IsSuspended()).To(BeTrue())
			g.Expect(env.Pods(ctx, g, ns, train.Name)).To(BeEmpty())
			wl := workloadOf(ctx, g, ns, train.Name)
			g.Expect(wl.UID).To(Equal(trainWorkload.UID), "the Workload was replaced rather than requeued")
			g.Expect(wl.Status.Admission).To(BeNil())
			g.Expect(workloadCondition(wl, kueue.WorkloadRequeued)).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())
		evicted := env.GetPodCliqueSet(ctx, Default, ns, train.Name)
		Expect(evicted.Status.RestartCount).To(BeZero(), "the eviction spent a restart")
		Expect(evicted.Status.LastFailure).To(BeNil(), "the eviction was recorded as a failure")
		Expect(evicted.Status.Phase).NotTo(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&trainPods[0]), &corev1.Pod{})).NotTo(Succeed(), "the evicted pod is still there")

		By("the preemptor runs; the PodCliqueSet backend TrainJob kept running through it, its pod never replaced")
		urgentPods := runningGPUPods(ctx, ns, client.MatchingLabels{labels.PartOfKey: urgent.Name}, 1)
		Expect(podNames(livePodsOf(ctx, Default, ns, client.MatchingLabels{labels.PartOfKey: onPCS.Name}))).To(Equal(podNames(pcsBackendPods)))

		By("the preemptor succeeds: the evicted PodCliqueSet is admitted again, runs, and succeeds with no restart spent")
		env.MakePodExit(ctx, &urgentPods[0], "0")
		trainPods = runningGPUPods(ctx, ns, client.MatchingLabels{labels.PartOfKey: train.Name}, 1)
		env.MakePodExit(ctx, &trainPods[0], "0")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, train.Name)
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(workloadCondition(workloadOf(ctx, g, ns, train.Name), kueue.WorkloadFinished)).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())

		By("an Inference PodCliqueSet in the queue is admitted and keeps running")
		serve := gpuPCS(ns, "serve", ns, ns+"-mid", copsev1alpha1.WorkloadTypeInference)
		Expect(env.Client.Create(ctx, serve)).To(Succeed())
		servePods := runningGPUPods(ctx, ns, client.MatchingLabels{labels.PartOfKey: serve.Name}, 1)
		Consistently(func(g Gomega) {
			g.Expect(podNames(livePodsOf(ctx, g, ns, client.MatchingLabels{labels.PartOfKey: serve.Name}))).To(Equal(podNames(servePods)))
			wl := workloadOf(ctx, g, ns, serve.Name)
			g.Expect(workloadCondition(wl, kueue.WorkloadAdmitted)).To(Equal(metav1.ConditionTrue))
			g.Expect(workloadCondition(wl, kueue.WorkloadFinished)).NotTo(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())

		By("the PodCliqueSet-backend TrainJob completes; nothing was lost and nothing was admitted twice")
		env.MakePodExit(ctx, &pcsBackendPods[0], "0")
		tjWaitComplete(ctx, onPCS)
		// Kueue marks a TrainJob's Workload Finished on its own pass after
		// the TrainJob completes, so the record may lag the condition.
		for _, tj := range []*trainerv1alpha1.TrainJob{onJobSet, onPCS} {
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, tj), kueue.WorkloadFinished)).To(Equal(metav1.ConditionTrue), "TrainJob %s", tj.Name)
			}).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())
		}
		Expect(env.GetPodCliqueSet(ctx, Default, ns, urgent.Name).Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		var workloads kueue.WorkloadList
		Expect(env.Client.List(ctx, &workloads, client.InNamespace(ns))).To(Succeed())
		Expect(len(workloads.Items)).To(Equal(5), "one Workload per TrainJob and PodCliqueSet")
		reserved, running := sampler.stop()
		Expect(reserved).To(Equal(int64(sharedGPUs)), "most GPUs Kueue reserved at once")
		Expect(running).To(BeNumerically("<=", sharedGPUs), "most GPUs held by pods that had not ended at once")
		Expect(running).To(BeNumerically(">=", 2*workloadGPUs), "the sampler never saw two workloads running")
	})
})

// gpuRuntime is a TrainingRuntime "gpu-<backend>" of one trainer node whose
// pod asks for workloadGPUs and runs until told to exit.
func gpuRuntime(namespace string, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainingRuntime {
	pod := framework.PodSpec(workloadGPUs)
	pod.RestartPolicy = corev1.RestartPolicyNever
	pod.Containers[0].Name = trainjob.NodeName
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gpu-" + strings.ToLower(string(backend))},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			Backend:  backend,
			MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: trainjob.NodeName, Replicas: 1, Template: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: trainjob.AncestorTrainer}},
					Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: pod}},
				}}},
			}},
		},
	}
}

// gpuTrainJob is a TrainJob of one trainer node on the backend's
// gpuRuntime, in LocalQueue queue with the WorkloadPriorityClass priority.
func gpuTrainJob(namespace, name, queue, priority string, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			copsekueue.QueueNameLabel: queue, copsekueue.PriorityClassLabel: priority}},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "gpu-" + strings.ToLower(string(backend)), Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
		},
	}
}

// gpuPCS is a PodCliqueSet of one pod asking for workloadGPUs, in LocalQueue
// queue with the WorkloadPriorityClass priority; a Training one has no
// restart to spare.
func gpuPCS(namespace, name, queue, priority string, workloadType copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	pod := framework.PodSpec(workloadGPUs)
	pod.RestartPolicy = corev1.RestartPolicyNever
	pcs := framework.NewPodCliqueSet(namespace, name, 1, framework.CliqueTemplate("worker", 1, pod))
	pcs.Labels = map[string]string{copsekueue.QueueNameLabel: queue, copsekueue.PriorityClassLabel: priority}
	pcs.Spec.WorkloadType = workloadType
	if workloadType == copsev1alpha1.WorkloadTypeTraining {
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
	}
	return pcs
}

// livePodsOf lists the namespace's pods matching selector that are not
// being deleted and have not ended.
func livePodsOf(ctx context.Context, g Gomega, namespace string, selector client.MatchingLabels) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace), selector)).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && !framework.IsTerminal(&p) {
			live = append(live, p)
		}
	}
	return live
}

// runningGPUPods waits until n pods matching selector run and are ready,
// and returns them.
func runningGPUPods(ctx context.Context, namespace string, selector client.MatchingLabels, n int) []corev1.Pod {
	GinkgoHelper()
	var running []corev1.Pod
	Eventually(func(g Gomega) {
		running = nil
		for _, p := range livePodsOf(ctx, g, namespace, selector) {
			if p.Status.Phase == corev1.PodRunning && framework.IsReady(&p) {
				running = append(running, p)
			}
		}
		g.Expect(running).To(HaveLen(n), "running pods of %v", selector)
	}).WithContext(ctx).WithTimeout(sharedWait).Should(Succeed())
	return running
}

// quotaSampler records, until stopped, the most GPUs Kueue had reserved at
// once in a namespace (over its Workloads' admissions) and the most GPUs
// held at once by the namespace's pods that had not ended (terminating
// ones included: a GPU is free only once its pod is gone).
type quotaSampler struct {
	mu                         sync.Mutex
	maxReserved, maxHeldByPods int64
	errs                       []error
	cancel                     context.CancelFunc
	done                       chan struct{}
}

func startQuotaSampler(ctx context.Context, namespace string) *quotaSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &quotaSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			reserved, held, err := sampleGPUs(ctx, namespace)
			s.mu.Lock()
			if err != nil && ctx.Err() == nil {
				s.errs = append(s.errs, err)
			}
			s.maxReserved, s.maxHeldByPods = max(s.maxReserved, reserved), max(s.maxHeldByPods, held)
			s.mu.Unlock()
			time.Sleep(sharedSampler)
		}
	}()
	return s
}

// stop ends the sampling (once; later calls return the same) and returns
// the maxima.
func (s *quotaSampler) stop() (maxReserved, maxHeldByPods int64) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	Expect(s.errs).To(BeEmpty(), "sampling failed")
	return s.maxReserved, s.maxHeldByPods
}

func sampleGPUs(ctx context.Context, namespace string) (reserved, held int64, err error) {
	var workloads kueue.WorkloadList
	if err := env.Client.List(ctx, &workloads, client.InNamespace(namespace)); err != nil {
		return 0, 0, fmt.Errorf("list Workloads: %w", err)
	}
	for _, wl := range workloads.Items {
		// A finished Workload keeps its admission as a record; its quota
		// is free.
		if wl.Status.Admission == nil || !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
			apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		for _, assignment := range wl.Status.Admission.PodSetAssignments {
			gpus := assignment.ResourceUsage[cluster.ResourceGPU]
			reserved += gpus.Value()
		}
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return 0, 0, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if framework.IsTerminal(&p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			gpus := c.Resources.Limits[cluster.ResourceGPU]
			held += gpus.Value()
		}
	}
	return reserved, held, nil
}
