package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

const (
	// tjWait bounds what takes the controllers (copse's, JobSet's,
	// Kueue's) a few passes.
	tjWait = 90 * time.Second
	tjPoll = 250 * time.Millisecond
	// tjGracePeriod is how long the simulated pods take to end once
	// deleted: long enough that a quota released when their deletion
	// starts, rather than when they are gone, is seen.
	tjGracePeriod = 3
	// kueueManager is the runtime patch manager of Kueue's TrainJob
	// integration.
	kueueManager = "kueue.x-k8s.io/manager"
	// tjPatchManager is this suite's own runtime patch manager.
	tjPatchManager = "e2e.copse.dev/kueue"
	// tjFlavorTaint is the key of the toleration the ResourceFlavor gives
	// admitted pods (no node has the taint: the toleration only has to
	// reach the pods).
	tjFlavorTaint = "e2e.copse.dev/kueue-flavor"
)

// tjBackend is what the TrainJob specs need to know of the object a
// TrainJob becomes; everything else is read from the TrainJob, its
// Workload and its pods the same way on both backends.
type tjBackend struct {
	kind trainerv1alpha1.RuntimeBackend
	// selector selects the TrainJob's pods.
	selector func(tj *trainerv1alpha1.TrainJob) client.MatchingLabels
	// step is the replicated job a pod runs.
	step func(pod *corev1.Pod) string
	// templateLabels are the pod labels the backend object has for a step.
	templateLabels func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string
}

var tjBackends = []tjBackend{
	{
		kind: trainerv1alpha1.RuntimeBackendJobSet,
		selector: func(tj *trainerv1alpha1.TrainJob) client.MatchingLabels {
			return client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: tj.Name}
		},
		step: func(pod *corev1.Pod) string { return pod.Labels[jobsetv1alpha2.ReplicatedJobNameKey] },
		templateLabels: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string {
			js := &jobsetv1alpha2.JobSet{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), js)).To(Succeed())
			for _, rjob := range js.Spec.ReplicatedJobs {
				if rjob.Name == step {
					return rjob.Template.Spec.Template.Labels
				}
			}
			g.Expect(fmt.Errorf("JobSet %s has no replicated job %s", js.Name, step)).NotTo(HaveOccurred())
			return nil
		},
	},
	{
		kind: trainerv1alpha1.RuntimeBackendPodCliqueSet,
		selector: func(tj *trainerv1alpha1.TrainJob) client.MatchingLabels {
			return client.MatchingLabels{labels.PartOfKey: tj.Name}
		},
		step: func(pod *corev1.Pod) string { return pod.Labels[labels.CliqueTemplateKey] },
		templateLabels: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string {
			pcs := tjPodCliqueSet(ctx, g, tj)
			clique := pcs.CliqueTemplate(step)
			g.Expect(clique).NotTo(BeNil(), "PodCliqueSet %s has no clique %s", pcs.Name, step)
			return clique.Labels
		},
	},
}

var _ = Describe("TrainJobs through Kueue's own TrainJob integration", Label("kueue"), func() {
	for _, b := range tjBackends {
		It(fmt.Sprintf("are queued suspended, admitted with the flavor's placement, preempted without a restart once their pods are gone, and complete (%s backend)", b.kind), func(ctx context.Context) {
			ns := env.NewNamespace(ctx, "kueue-tj")
			rack := env.Topology.Placements()[len(env.Topology.Placements())-1].RackName()
			queues := framework.KueueQueues{
				ClusterQueue: ns,
				Flavor: framework.KueueFlavor{Name: ns, NodeLabels: map[string]string{cluster.LabelRack: rack},
					Tolerations: []corev1.Toleration{{Key: tjFlavorTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
				// One TrainJob fits (1.5 cpu; 1 once its initializer
				// succeeded, which Kueue then reclaims), two do not.
				Quota:                corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
				PreemptLowerPriority: true,
				Namespaces:           []string{ns},
				PriorityClasses:      map[string]int32{ns + "-low": 100, ns + "-high": 1000},
			}
			Expect(env.Client.Create(ctx, tjRuntime(ns, b.kind))).To(Succeed())
			Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())
			setStopPolicy(ctx, queues.ClusterQueue, kueue.Hold)

			By("creating a TrainJob in the held queue, not suspended by its author: Kueue's webhook suspends it")
			low := queuedTrainJob(ns, "low", queues.ClusterQueue, ns+"-low")
			Expect(env.Client.Create(ctx, low)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				for _, name := range []string{"low", "high"} {
					tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					Expect(client.IgnoreNotFound(env.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
					tjExpectGone(ctx, tj)
				}
				Expect(framework.DeleteKueueQueues(ctx, env.Client, queues)).To(Succeed())
			})
			// The API server answers with the object as admitted.
			Expect(low.Spec.Suspend).To(Equal(ptr.To(true)), "stored unsuspended: Kueue's TrainJob webhook did not suspend it")
			Expect(kueuePatch(low)).NotTo(BeNil(), "Kueue's webhook added no runtime patch of manager %s", kueueManager)

			By("waiting, suspended and without pods, while its ClusterQueue is held; its Workload counts the pods copse will create")
			Eventually(func(g Gomega) {
				g.Expect(podSetCounts(tjWorkload(ctx, g, low))).To(Equal(map[string]int32{trainjob.DatasetInitializerName: 1, trainjob.NodeName: 2}))
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(apimeta.IsStatusConditionTrue(getTJ(ctx, g, low).Status.Conditions, trainerv1alpha1.TrainJobSuspended)).To(BeTrue(), "Suspended=True")
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			Consistently(func(g Gomega) {
				got := getTJ(ctx, g, low)
				g.Expect(got.Spec.Suspend).To(Equal(ptr.To(true)))
				g.Expect(tjPods(ctx, g, b, low)).To(BeEmpty())
				// Not admitted yet: copse builds its backend object at the
				// first admission (docs/trainjob.md#kueue).
				g.Expect(got.Status.Backend).To(BeNil())
				g.Expect(tjBackendObjects(ctx, g, low)).To(BeEmpty(), "backend objects of a TrainJob Kueue has not admitted")
			}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(tjPoll).Should(Succeed())

			By("releasing the ClusterQueue: Kueue admits it, and its pods run on the flavor's nodes with its toleration")
			setStopPolicy(ctx, queues.ClusterQueue, kueue.None)
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, low), kueue.WorkloadAdmitted)).To(Equal(metav1.ConditionTrue))
				g.Expect(getTJ(ctx, g, low).Spec.Suspend).To(Equal(ptr.To(false)))
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			firstRun := tjRunningNodes(ctx, b, low, 2)
			var created map[string]int32
			Eventually(func(g Gomega) {
				pods := tjPods(ctx, g, b, low)
				created = map[string]int32{}
				for i := range pods {
					created[b.step(&pods[i])]++
					expectOnFlavor(ctx, g, &pods[i], b.step(&pods[i]), rack)
				}
				g.Expect(created).To(Equal(podSetCounts(tjWorkload(ctx, g, low))), "pods created per replicated job vs the Workload's pod sets")
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			Expect(created).To(Equal(map[string]int32{trainjob.DatasetInitializerName: 1, trainjob.NodeName: 2}))
			expectOneWorkload(ctx, ns)
			// Kueue v0.19 evicts a Workload whose PodsReady is not True
			// within waitForPodsReady's timeout: Kueue derives it from the
			// TrainJob's jobsStatus, which copse writes on both backends.
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, low), kueue.WorkloadPodsReady)).To(Equal(metav1.ConditionTrue),
					func() string { return "PodsReady not True: " + tjState(ctx, b, low) })
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			if b.kind == trainerv1alpha1.RuntimeBackendPodCliqueSet {
				Expect(tjPodCliqueSet(ctx, Default, low).Labels).NotTo(HaveKey(copsekueue.QueueNameLabel),
					"the TrainJob's PodCliqueSet would be queued a second time")
			}

			By("submitting a higher-priority TrainJob: Kueue preempts the first, whose quota is released only once its pods are gone")
			high := queuedTrainJob(ns, "high", queues.ClusterQueue, ns+"-high")
			tjPodsOf(high, trainjob.NodeName).Metadata = &metav1.ObjectMeta{
				Annotations: map[string]string{cluster.AnnotationRunDuration: "2s", cluster.AnnotationExitCode: "0"}}
			Expect(env.Client.Create(ctx, high)).To(Succeed())
			var leftAtRelease []corev1.Pod
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, low), kueue.WorkloadQuotaReserved)).To(Equal(metav1.ConditionFalse),
					func() string { return "quota still reserved: " + tjState(ctx, b, low) + tjState(ctx, b, high) })
				// Read at once: a pod left now was left when the quota went.
				leftAtRelease = tjPods(ctx, g, b, low)
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(50 * time.Millisecond).Should(Succeed())
			evicted := apimeta.FindStatusCondition(tjWorkload(ctx, Default, low).Status.Conditions, kueue.WorkloadEvicted)
			Expect(evicted).NotTo(BeNil())
			Expect(evicted.Reason).To(Equal(kueue.WorkloadEvictedByPreemption))
			// Ended pods (an initializer's) hold no resources.
			holding := slices.DeleteFunc(leftAtRelease, func(p corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			switch b.kind {
			case trainerv1alpha1.RuntimeBackendPodCliqueSet:
				// Its cliques count as active while their pods go away.
				Expect(podNames(holding)).To(BeEmpty(), "pods of the preempted TrainJob not ended when Kueue released its quota")
			default:
				// A Job stops counting a pod as active once its deletion
				// starts (status.active), and Kueue releases a job's quota
				// when none is active: what is left is terminating.
				for _, p := range holding {
					Expect(p.DeletionTimestamp).NotTo(BeNil(), "pod %s still running when Kueue released the quota", p.Name)
				}
			}
			Expect(getTJ(ctx, Default, low).Spec.Suspend).To(Equal(ptr.To(true)))
			tjExpectPodsEnded(ctx, b, low)
			Eventually(func(g Gomega) {
				g.Expect(kueuePatch(getTJ(ctx, g, low)).TrainingRuntimeSpec.Template.Spec.ReplicatedJobs).To(BeEmpty(),
					"Kueue has not restored the TrainJob")
				g.Expect(b.templateLabels(ctx, g, low, trainjob.NodeName)).NotTo(HaveKey(copsekueue.PodSetLabel),
					"the backend object still has the admission's pod templates")
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())

			By("the higher-priority TrainJob runs and completes; then the first is admitted again and completes, with no restart spent")
			tjWaitComplete(ctx, high)
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, high), kueue.WorkloadFinished)).To(Equal(metav1.ConditionTrue))
				g.Expect(workloadCondition(tjWorkload(ctx, g, low), kueue.WorkloadAdmitted)).To(Equal(metav1.ConditionTrue))
				g.Expect(getTJ(ctx, g, low).Spec.Suspend).To(Equal(ptr.To(false)))
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			secondRun := tjRunningNodes(ctx, b, low, 2)
			for i := range secondRun {
				Expect(podNames(firstRun)).NotTo(ContainElement(secondRun[i].Name + "/" + string(secondRun[i].UID)))
				expectOnFlavor(ctx, Default, &secondRun[i], trainjob.NodeName, rack)
				env.MakePodExit(ctx, &secondRun[i], "0")
			}
			tjWaitComplete(ctx, low)
			Eventually(func(g Gomega) {
				g.Expect(workloadCondition(tjWorkload(ctx, g, low), kueue.WorkloadFinished)).To(Equal(metav1.ConditionTrue))
			}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
			if b.kind == trainerv1alpha1.RuntimeBackendPodCliqueSet {
				pcs := tjPodCliqueSet(ctx, Default, low)
				Expect(pcs.Status.RestartCount).To(BeZero(), "the preemption spent a restart")
				Expect(pcs.Status.LastFailure).To(BeNil(), "the preemption was recorded as a failure")
			}
		})
	}

	// Kueue's Stop suspends the TrainJob and, once no job is active, clears
	// its patch: copse may see both at once while the PodCliqueSet still
	// runs (admitted and stopped before its status counted a pod). A user
	// may write both in one update too while pods run: the TrainJob
	// webhook's rule against patch changes while a Job is active (Kubeflow
	// Trainer's) reads the JobSet, which this backend does not have. The
	// JobSet backend is not in this spec for that reason: there the update
	// is refused while a Job is active.
	It("is suspended first and rebuilt once its pods are gone when a stop and a cleared patch come in one update (PodCliqueSet backend)", func(ctx context.Context) {
		b := tjBackends[1]
		ns := env.NewNamespace(ctx, "kueue-tj-stop")
		rack := env.Topology.Placements()[0].RackName()
		Expect(env.Client.Create(ctx, tjRuntime(ns, b.kind))).To(Succeed())
		tj := &trainerv1alpha1.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stopped"},
			Spec: trainerv1alpha1.TrainJobSpec{
				RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "kueue-runtime", Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
				Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2)},
			},
		}
		node := tjPodsOf(tj, trainjob.NodeName)
		node.Metadata = &metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}}
		node.Spec = &trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{cluster.LabelRack: rack}}
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
			tjExpectGone(ctx, tj)
		})
		for _, p := range tjRunningNodes(ctx, b, tj, 2) {
			Expect(p.Labels).To(HaveKeyWithValue("team", "vision"))
		}

		By("suspending it and clearing the patch's replicated jobs in one update")
		Eventually(func(g Gomega) {
			current := getTJ(ctx, g, tj)
			current.Spec.Suspend = ptr.To(true)
			for i := range current.Spec.RuntimePatches {
				if current.Spec.RuntimePatches[i].Manager == tjPatchManager {
					current.Spec.RuntimePatches[i].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = nil
				}
			}
			g.Expect(env.Client.Update(ctx, current)).To(Succeed())
		}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())

		By("its pods go, and then its backend object takes the cleared patch, without a refused rebuild")
		tjExpectNoPods(ctx, b, tj)
		Eventually(func(g Gomega) {
			g.Expect(b.templateLabels(ctx, g, tj, trainjob.NodeName)).NotTo(HaveKey("team"))
		}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
		got := getTJ(ctx, Default, tj)
		Expect(apimeta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobBackendRefused)).To(BeNil(), "a refused rebuild")
		Expect(apimeta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobFailed)).To(BeNil())

		By("resumed, it runs pods without the cleared patch")
		Eventually(func(g Gomega) {
			current := getTJ(ctx, g, tj)
			current.Spec.Suspend = ptr.To(false)
			g.Expect(env.Client.Update(ctx, current)).To(Succeed())
		}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
		for _, p := range tjRunningNodes(ctx, b, tj, 2) {
			Expect(p.Labels).NotTo(HaveKey("team"))
		}
	})
})

// tjRuntime is a TrainingRuntime "kueue-runtime" of the namespace on the
// backend: a dataset initializer (one pod, 0.5 cpu, exits 0 after a second)
// and the trainer "node" (0.5 cpu a pod), started once the initializer
// completed, failing at the first failed pod. Its pods end tjGracePeriod
// seconds after deletion. (The grace period is the runtime's, not a runtime
// patch's: Kueue v0.19.2 rewrites TrainJobs with Kubeflow Trainer v2.2.1's
// types, which have no terminationGracePeriodSeconds in a patch.)
func tjRuntime(namespace string, backend trainerv1alpha1.RuntimeBackend) *trainerv1alpha1.TrainingRuntime {
	job := func(step, container string, annotations map[string]string) batchv1.JobTemplateSpec {
		return batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: step}},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
					Spec: corev1.PodSpec{
						RestartPolicy:                 corev1.RestartPolicyNever,
						TerminationGracePeriodSeconds: ptr.To[int64](tjGracePeriod),
						Containers: []corev1.Container{{Name: container, Image: "registry.example/" + container + ":v1",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
					},
				},
			},
		}
	}
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kueue-runtime"},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			Backend:  backend,
			MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
					{Name: trainjob.DatasetInitializerName, Replicas: 1, Template: job(trainjob.AncestorDatasetInitializer, trainjob.DatasetInitializerName,
						map[string]string{cluster.AnnotationRunDuration: "1s", cluster.AnnotationExitCode: "0"})},
					{Name: trainjob.NodeName, Replicas: 1, Template: job(trainjob.AncestorTrainer, trainjob.NodeName, nil),
						DependsOn: []jobsetv1alpha2.DependsOn{{Name: trainjob.DatasetInitializerName, Status: jobsetv1alpha2.DependencyComplete}}},
				},
			}},
		},
	}
}

// queuedTrainJob is a TrainJob of two trainer nodes on the namespace's
// kueue-runtime, in the LocalQueue queue with the WorkloadPriorityClass
// priority, not suspended by its author. Its trainer pods run until told to
// exit.
func queuedTrainJob(namespace, name, queue, priority string) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			copsekueue.QueueNameLabel: queue, copsekueue.PriorityClassLabel: priority}},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "kueue-runtime", Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2)},
		},
	}
}

// tjPodsOf is the pod template patch of one replicated job in the
// TrainJob's runtime patch of this suite, added if missing.
func tjPodsOf(tj *trainerv1alpha1.TrainJob, job string) *trainerv1alpha1.PodTemplatePatch {
	return framework.RuntimePatchPod(tj, tjPatchManager, job)
}

// tjState describes a TrainJob, its Workload, its backend object and its
// pods, for a failure message.
func tjState(ctx context.Context, b tjBackend, tj *trainerv1alpha1.TrainJob) string {
	out := fmt.Sprintf("\nTrainJob %s:", tj.Name)
	current := &trainerv1alpha1.TrainJob{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), current); err != nil {
		return out + " " + err.Error()
	}
	out += fmt.Sprintf(" suspend %v", ptr.Deref(current.Spec.Suspend, false))
	for _, c := range current.Status.Conditions {
		out += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Reason)
	}
	for _, js := range current.Status.JobsStatus {
		out += fmt.Sprintf(" job %s active %d suspended %d ready %d succeeded %d;", js.Name,
			ptr.Deref(js.Active, 0), ptr.Deref(js.Suspended, 0), ptr.Deref(js.Ready, 0), ptr.Deref(js.Succeeded, 0))
	}
	if p := kueuePatch(current); p != nil && p.TrainingRuntimeSpec != nil && p.TrainingRuntimeSpec.Template != nil && p.TrainingRuntimeSpec.Template.Spec != nil {
		out += fmt.Sprintf(" kueue patch jobs %d", len(p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs))
	}
	var workloads kueue.WorkloadList
	if err := env.Client.List(ctx, &workloads, client.InNamespace(tj.Namespace)); err == nil {
		for _, wl := range workloads.Items {
			if metav1.IsControlledBy(&wl, current) {
				out += "\n  Workload " + wl.Name + ":"
				for _, c := range wl.Status.Conditions {
					out += fmt.Sprintf(" %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
				}
			}
		}
	}
	if b.kind == trainerv1alpha1.RuntimeBackendJobSet {
		js := &jobsetv1alpha2.JobSet{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), js); err == nil {
			out += fmt.Sprintf("\n  JobSet: suspend %v", ptr.Deref(js.Spec.Suspend, false))
			for _, c := range js.Status.Conditions {
				out += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Reason)
			}
			for _, r := range js.Status.ReplicatedJobsStatus {
				out += fmt.Sprintf(" %s: active %d suspended %d succeeded %d;", r.Name, r.Active, r.Suspended, r.Succeeded)
			}
		}
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(tj.Namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: tj.Name}); err == nil {
			for _, j := range jobs.Items {
				out += fmt.Sprintf("\n  Job %s: suspend %v active %d terminating %d", j.Name, ptr.Deref(j.Spec.Suspend, false), j.Status.Active, ptr.Deref(j.Status.Terminating, 0))
			}
		}
	}
	if b.kind == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs); err == nil {
			out += fmt.Sprintf("\n  PodCliqueSet: suspend %v phase %s startTime %v restarts %d", pcs.IsSuspended(), pcs.Status.Phase, pcs.Status.StartTime, pcs.Status.RestartCount)
			for _, c := range pcs.Status.Conditions {
				out += fmt.Sprintf(" %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(tj.Namespace), b.selector(tj)); err == nil {
		for _, p := range pods.Items {
			out += fmt.Sprintf("\n  pod %s %s deleting %v finalizers %v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, p.Finalizers)
		}
	}
	return out
}

// setStopPolicy sets a ClusterQueue's stopPolicy and waits until Kueue
// says so in its Active condition (False, reason Stopped, while it holds).
func setStopPolicy(ctx context.Context, name string, policy kueue.StopPolicy) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cq := &kueue.ClusterQueue{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		cq.Spec.StopPolicy = ptr.To(policy)
		g.Expect(env.Client.Update(ctx, cq)).To(Succeed())
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
	want := metav1.ConditionTrue
	if policy != kueue.None {
		want = metav1.ConditionFalse
	}
	Eventually(func(g Gomega) {
		cq := &kueue.ClusterQueue{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		active := apimeta.FindStatusCondition(cq.Status.Conditions, kueue.ClusterQueueActive)
		g.Expect(active).NotTo(BeNil())
		g.Expect(active.Status).To(Equal(want), "ClusterQueue %s Active: %s %s", name, active.Reason, active.Message)
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
}

// kueuePatch is the TrainJob's runtime patch of Kueue's manager, nil if
// none.
func kueuePatch(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.RuntimePatch {
	for i := range tj.Spec.RuntimePatches {
		if tj.Spec.RuntimePatches[i].Manager == kueueManager {
			return &tj.Spec.RuntimePatches[i]
		}
	}
	return nil
}

func getTJ(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	got := &trainerv1alpha1.TrainJob{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
	return got
}

func tjPodCliqueSet(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs)).To(Succeed())
	return pcs
}

// tjWorkload is the Workload Kueue made for the TrainJob: the one it
// controls.
func tjWorkload(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) *kueue.Workload {
	current := getTJ(ctx, g, tj)
	var workloads kueue.WorkloadList
	g.Expect(env.Client.List(ctx, &workloads, client.InNamespace(tj.Namespace))).To(Succeed())
	for i := range workloads.Items {
		if metav1.IsControlledBy(&workloads.Items[i], current) {
			return &workloads.Items[i]
		}
	}
	g.Expect(fmt.Errorf("no Workload for TrainJob %s", tj.Name)).NotTo(HaveOccurred())
	return nil
}

// tjBackendObjects names the JobSet and the PodCliqueSet of the TrainJob's
// name that exist.
func tjBackendObjects(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) []string {
	var out []string
	for _, obj := range []client.Object{&jobsetv1alpha2.JobSet{}, &copsev1alpha1.PodCliqueSet{}} {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		g.Expect(err).NotTo(HaveOccurred())
		out = append(out, fmt.Sprintf("%T %s", obj, obj.GetName()))
	}
	return out
}

// expectOneWorkload: Kueue queues the TrainJob only, not its JobSet, and
// copse does not queue its PodCliqueSet.
func expectOneWorkload(ctx context.Context, namespace string) {
	GinkgoHelper()
	var workloads kueue.WorkloadList
	Expect(env.Client.List(ctx, &workloads, client.InNamespace(namespace))).To(Succeed())
	var names []string
	for _, wl := range workloads.Items {
		names = append(names, wl.Name)
	}
	Expect(names).To(HaveLen(1), "Workloads of the namespace")
}

func podSetCounts(wl *kueue.Workload) map[string]int32 {
	out := map[string]int32{}
	for _, ps := range wl.Spec.PodSets {
		out[string(ps.Name)] = ps.Count
	}
	return out
}

// workloadCondition is the status of a Workload's condition, "" when it
// has none.
func workloadCondition(wl *kueue.Workload, conditionType string) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, conditionType); c != nil {
		return c.Status
	}
	return ""
}

// tjPods are the TrainJob's pods, ended ones included.
func tjPods(ctx context.Context, g Gomega, b tjBackend, tj *trainerv1alpha1.TrainJob) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(tj.Namespace), b.selector(tj))).To(Succeed())
	return pods.Items
}

// tjRunningNodes waits until n trainer pods of the TrainJob run and are
// ready, and returns them.
func tjRunningNodes(ctx context.Context, b tjBackend, tj *trainerv1alpha1.TrainJob, n int) []corev1.Pod {
	GinkgoHelper()
	var running []corev1.Pod
	Eventually(func(g Gomega) {
		running = nil
		for _, p := range tjPods(ctx, g, b, tj) {
			if b.step(&p) == trainjob.NodeName && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && framework.IsReady(&p) {
				running = append(running, p)
			}
		}
		g.Expect(running).To(HaveLen(n), "running trainer pods")
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
	return running
}

func tjExpectNoPods(ctx context.Context, b tjBackend, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(podNames(tjPods(ctx, g, b, tj))).To(BeEmpty(), func() string { return tjState(ctx, b, tj) })
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
}

// tjExpectPodsEnded waits until every pod of the TrainJob has ended or is
// gone (a JobSet keeps the pods of its completed Jobs).
func tjExpectPodsEnded(ctx context.Context, b tjBackend, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var notEnded []corev1.Pod
		for _, p := range tjPods(ctx, g, b, tj) {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				notEnded = append(notEnded, p)
			}
		}
		g.Expect(podNames(notEnded)).To(BeEmpty(), func() string { return tjState(ctx, b, tj) })
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
}

func tjExpectGone(ctx context.Context, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), &trainerv1alpha1.TrainJob{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(BeTrue(), "TrainJob %s not deleted", tj.Name)
}

func tjWaitComplete(ctx context.Context, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := getTJ(ctx, g, tj)
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobComplete)).To(BeTrue(),
			"conditions: %v", got.Status.Conditions)
	}).WithContext(ctx).WithTimeout(tjWait).WithPolling(tjPoll).Should(Succeed())
}

// expectOnFlavor: the pod carries what Kueue's admission gave its pod set
// (the flavor's node labels and toleration, Kueue's pod set label) and runs
// on the flavor's rack.
func expectOnFlavor(ctx context.Context, g Gomega, pod *corev1.Pod, step, rack string) {
	g.Expect(pod.Labels).To(HaveKeyWithValue(copsekueue.PodSetLabel, step), "pod %s", pod.Name)
	g.Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelRack, rack), "pod %s", pod.Name)
	g.Expect(pod.Spec.Tolerations).To(ContainElement(HaveField("Key", tjFlavorTaint)), "pod %s", pod.Name)
	g.Expect(pod.Spec.NodeName).NotTo(BeEmpty(), "pod %s not scheduled", pod.Name)
	node := &corev1.Node{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node)).To(Succeed())
	g.Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelRack, rack), "pod %s on node %s", pod.Name, node.Name)
}

// podNames names pods with their UIDs, so that a pod recreated under the
// same name is told apart.
func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name+"/"+string(p.UID))
	}
	return out
}
