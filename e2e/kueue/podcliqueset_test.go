package kueue_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// pcsWait bounds the waits of these specs: admission, pods starting and
// going take seconds on the local cluster; a loaded machine takes longer.
const pcsWait = 2 * time.Minute

// The flavor every spec's ClusterQueue admits to: pods must land on the
// simulated nodes (their label type=kwok) and carry a toleration Kueue's
// flavor gives them.
var flavorToleration = corev1.Toleration{Key: "example.com/queue", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

var _ = Describe("Kueue queues PodCliqueSets", Label("kueue"), func() {
	It("keeps a Training PodCliqueSet suspended without pods until it is admitted, places it on the flavor, "+
		"and lets a second one in only when the first succeeded and its Workload finished", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-quota", "2", false)
		first := queuedPCS(ns, "first", queues.ClusterQueue, 2, "1")

		By("the first, alone in the queue, is admitted: its pods run on the flavor's nodes with its toleration and the podset label")
		Expect(env.Client.Create(ctx, first)).To(Succeed())
		Expect(first.Spec.Suspend).To(Equal(ptr.To(true)), "the webhook did not suspend a queued PodCliqueSet at creation")
		pods := readyPods(ctx, ns, "first", 2)
		for _, pod := range pods {
			Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelType, cluster.TypeKwok), "pod %s", pod.Name)
			Expect(pod.Spec.Tolerations).To(ContainElement(flavorToleration), "pod %s", pod.Name)
			Expect(pod.Labels).To(HaveKeyWithValue(copsekueue.PodSetLabel, "worker"), "pod %s", pod.Name)
		}
		expectAdmitted(ctx, ns, "first", metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted, "admitted by ClusterQueue "+queues.ClusterQueue)

		By("the second waits, suspended, with no pod, its condition quoting Kueue")
		second := queuedPCS(ns, "second", queues.ClusterQueue, 2, "1")
		Expect(env.Client.Create(ctx, second)).To(Succeed())
		expectAdmitted(ctx, ns, "second", metav1.ConditionFalse, copsev1alpha1.ReasonPending, "insufficient unused quota for cpu")
		Consistently(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "second")
			g.Expect(pcs.IsSuspended()).To(BeTrue())
			g.Expect(env.Pods(ctx, g, ns, "second")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("the first's pods exit 0: it succeeds, its Workload is Finished, and the second is admitted")
		for i := range pods {
			env.MakePodExit(ctx, &pods[i], "0")
		}
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "first").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			finished := apimeta.FindStatusCondition(workloadOf(ctx, g, ns, "first").Status.Conditions, kueue.WorkloadFinished)
			g.Expect(finished).NotTo(BeNil())
			g.Expect(finished.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(finished.Reason).To(Equal(kueue.WorkloadFinishedReasonSucceeded))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		secondPods := readyPods(ctx, ns, "second", 2)
		expectAdmitted(ctx, ns, "second", metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted, "")
		Eventually(func() []string { return events(ctx, ns, "second", copsekueue.EventAdmitted) }).
			WithContext(ctx).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
		for i := range secondPods {
			env.MakePodExit(ctx, &secondPods[i], "0")
		}
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "second").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(apimeta.IsStatusConditionTrue(workloadOf(ctx, g, ns, "second").Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())

		By("observing both admissions in copse_kueue_admission_wait_seconds, scraped from the operator; the second waited at least the 3 s it was held")
		m, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
		Expect(err).NotTo(HaveOccurred())
		in := map[string]string{"namespace": ns}
		Expect(m.Sum("copse_kueue_admission_wait_seconds", in)).To(Equal(2.0), "two admissions")
		Expect(m.HistogramSum("copse_kueue_admission_wait_seconds", in)).To(BeNumerically(">=", 3))
	})

	It("admits a queued PodCliqueSet of 18 cliques, one pod set each, and refuses one of 19 naming the limit of the installed Kueue's Workload CRD", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-podsets", "19", false)
		withCliques := func(name string, n int) *copsev1alpha1.PodCliqueSet {
			pcs := queuedPCS(ns, name, queues.ClusterQueue, 1, "100m")
			for i := 1; i < n; i++ {
				pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, framework.CliqueTemplate(fmt.Sprintf("c%02d", i), 1, podSpec("100m")))
			}
			return pcs
		}

		By("19 cliques: refused at creation, naming the field and Kueue v0.19's limit of 18 pod sets")
		err := env.Client.Create(ctx, withCliques("nineteen", 19))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "created, or refused for another reason: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.template.cliques: Forbidden: has 19 cliques, but a PodCliqueSet with " +
			"metadata.labels[kueue.x-k8s.io/queue-name] has at most 18: its Kueue Workload has one pod set per clique, " +
			"and the Kueue installed allows 18 pod sets (spec.podSets of its Workload CRD)"))

		By("18 cliques: one pod set per clique, admitted, every pod running")
		Expect(env.Client.Create(ctx, withCliques("eighteen", 18))).To(Succeed())
		readyPods(ctx, ns, "eighteen", 18)
		expectAdmitted(ctx, ns, "eighteen", metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted, "")
		Expect(workloadOf(ctx, Default, ns, "eighteen").Spec.PodSets).To(HaveLen(18))
	})

	It("suspends a Training PodCliqueSet preempted by a higher-priority one without counting a failure, "+
		"requeues its Workload and runs it to success once admitted again", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-preempt", "2", true)

		By("the low-priority victim runs, with no restart to spare")
		victim := queuedPCS(ns, "victim", queues.ClusterQueue, 2, "1")
		victim.Labels[copsekueue.PriorityClassLabel] = ns + "-low"
		Expect(env.Client.Create(ctx, victim)).To(Succeed())
		victimPods := readyPods(ctx, ns, "victim", 2)
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "victim").Status.StartTime).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		firstWorkload := workloadOf(ctx, Default, ns, "victim")
		Expect(firstWorkload.Spec.PriorityClassRef).To(Equal(kueue.NewWorkloadPriorityClassRef(ns + "-low")))

		By("a high-priority PodCliqueSet arrives: Kueue preempts the victim, which is suspended with every pod gone, nothing counted against it")
		preemptor := queuedPCS(ns, "preemptor", queues.ClusterQueue, 2, "1")
		preemptor.Labels[copsekueue.PriorityClassLabel] = ns + "-high"
		Expect(env.Client.Create(ctx, preemptor)).To(Succeed())
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "victim")
			g.Expect(pcs.IsSuspended()).To(BeTrue())
			g.Expect(env.Pods(ctx, g, ns, "victim")).To(BeEmpty())
			g.Expect(pcs.Status.StartTime).To(BeNil(), "startTime is kept while suspended")
			wl := workloadOf(ctx, g, ns, "victim")
			requeued := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadRequeued)
			g.Expect(requeued).NotTo(BeNil())
			g.Expect(requeued.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(requeued.Reason).To(Equal(kueue.WorkloadEvictedByPreemption))
			g.Expect(wl.Status.Admission).To(BeNil())
			g.Expect(wl.UID).To(Equal(firstWorkload.UID), "the Workload was replaced rather than requeued")
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		for _, pod := range victimPods {
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&pod), &corev1.Pod{})).To(Satisfy(apierrors.IsNotFound), "pod %s", pod.Name)
		}
		suspended := env.GetPodCliqueSet(ctx, Default, ns, "victim")
		Expect(suspended.Status.RestartCount).To(BeZero())
		Expect(suspended.Status.LastFailure).To(BeNil())
		Expect(suspended.Status.Phase).NotTo(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
		Expect(apimeta.IsStatusConditionTrue(suspended.Status.Conditions, copsev1alpha1.ConditionTypeFailed)).To(BeFalse())
		for _, clique := range suspended.Spec.Template.Cliques {
			Expect(clique.Labels).NotTo(HaveKey(copsekueue.PodSetLabel), "clique %s keeps the admission after the eviction", clique.Name)
			Expect(clique.Spec.PodSpec.NodeSelector).To(BeEmpty(), "clique %s", clique.Name)
		}
		Eventually(func() []string { return events(ctx, ns, "victim", copsekueue.EventEvicted) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(ContainElement(ContainSubstring("Preempted")))
		Eventually(func() []string { return events(ctx, ns, "victim", copsekueue.EventRequeued) }).
			WithContext(ctx).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
		expectAdmitted(ctx, ns, "victim", metav1.ConditionFalse, copsev1alpha1.ReasonPending, "")

		By("the preemptor runs and succeeds; the victim is admitted again and succeeds, with no restart spent")
		preemptorPods := readyPods(ctx, ns, "preemptor", 2)
		for i := range preemptorPods {
			env.MakePodExit(ctx, &preemptorPods[i], "0")
		}
		victimPods = readyPods(ctx, ns, "victim", 2)
		for i := range victimPods {
			Expect(victimPods[i].Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"), "pod %s is not of the run after the suspension", victimPods[i].Name)
			env.MakePodExit(ctx, &victimPods[i], "0")
		}
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "victim")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(pcs.Status.LastFailure).To(BeNil())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
	})

	It("admits an Inference PodCliqueSet and keeps it running, its Workload never finished; "+
		"the queue label cannot change while it runs; a scale change stops and requeues it", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-inference", "2", false)
		pcs := framework.NewPodCliqueSet(ns, "serve", 1, framework.CliqueTemplate("server", 2, podSpec("500m")))
		pcs.Labels = map[string]string{copsekueue.QueueNameLabel: queues.ClusterQueue}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		readyPods(ctx, ns, "serve", 2)
		Eventually(func(g Gomega) {
			ready := apimeta.FindStatusCondition(workloadOf(ctx, g, ns, "serve").Status.Conditions, kueue.WorkloadPodsReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "serve").IsSuspended()).To(BeFalse())
			g.Expect(apimeta.IsStatusConditionTrue(workloadOf(ctx, g, ns, "serve").Status.Conditions, kueue.WorkloadFinished)).To(BeFalse())
			g.Expect(env.LivePods(ctx, g, ns, "serve")).To(HaveLen(2))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())

		By("a label-only update moving it to another queue is refused while it runs")
		running := env.GetPodCliqueSet(ctx, Default, ns, "serve")
		patch := client.MergeFrom(running.DeepCopy())
		running.Labels[copsekueue.QueueNameLabel] = "elsewhere"
		err := env.Client.Patch(ctx, running, patch)
		Expect(err).To(HaveOccurred(), "the queue label changed on a running PodCliqueSet")
		Expect(err.Error()).To(ContainSubstring("metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: may be added, changed or removed only while spec.suspend is true"))

		By("scaled to 2 replicas: stopped, its Workload replaced by one of the new size, admitted again and running")
		old := workloadOf(ctx, Default, ns, "serve")
		scaled := env.GetPodCliqueSet(ctx, Default, ns, "serve")
		scaled.Spec.Replicas = 2
		Expect(env.Client.Update(ctx, scaled)).To(Succeed())
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, ns, "serve")
			g.Expect(wl.UID).NotTo(Equal(old.UID), "the Workload of 2 pods is still there")
			g.Expect(wl.Spec.PodSets).To(HaveLen(1))
			g.Expect(wl.Spec.PodSets[0].Count).To(Equal(int32(4)))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		Eventually(func() []string { return events(ctx, ns, "serve", copsekueue.EventEvicted) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(ContainElement(ContainSubstring("no longer matches")))
		readyPods(ctx, ns, "serve", 4)
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "serve").IsSuspended()).To(BeFalse())
	})

	It("counts a scaling group's pods over its replicas in the Workload's pod sets", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-groups", "4", false)
		pcs := framework.NewPodCliqueSet(ns, "grouped", 2,
			framework.CliqueTemplate("leader", 1, podSpec("100m")),
			framework.CliqueTemplate("prefill", 1, podSpec("100m")),
			framework.CliqueTemplate("decode", 2, podSpec("100m")))
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "model", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](2)},
		}
		pcs.Labels = map[string]string{copsekueue.QueueNameLabel: queues.ClusterQueue}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		// 2 replicas: leader 1 pod each; the group 2 replicas of prefill (1) and decode (2).
		want := map[kueue.PodSetReference]int32{"leader": 2, "prefill": 4, "decode": 8}
		Eventually(func(g Gomega) {
			counts := map[kueue.PodSetReference]int32{}
			for _, ps := range workloadOf(ctx, g, ns, "grouped").Spec.PodSets {
				counts[ps.Name] = ps.Count
			}
			g.Expect(counts).To(Equal(want))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		pods := readyPods(ctx, ns, "grouped", 14)
		perClique := map[string]int32{}
		for _, pod := range pods {
			perClique[pod.Labels[copsekueue.PodSetLabel]]++
			Expect(pod.Labels[copsekueue.PodSetLabel]).To(Equal(pod.Labels[labels.CliqueTemplateKey]), "pod %s", pod.Name)
		}
		Expect(perClique).To(Equal(map[string]int32{"leader": 2, "prefill": 4, "decode": 8}))

		By("scaling a PodClique or a scaling group beyond its admitted count is refused, naming the field")
		leader := &copsev1alpha1.PodClique{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grouped-0-leader"}, leader)).To(Succeed())
		leader.Spec.Replicas = 2
		err := env.Client.Update(ctx, leader)
		Expect(err).To(HaveOccurred(), "a PodClique of a queued PodCliqueSet was scaled beyond its quota")
		Expect(err.Error()).To(ContainSubstring(`spec.replicas: Forbidden: may be at most 1: PodCliqueSet %s/grouped is queued through Kueue`, ns))
		group := &copsev1alpha1.PodCliqueScalingGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grouped-0-model"}, group)).To(Succeed())
		scale := &autoscalingv1.Scale{}
		Expect(env.Client.SubResource("scale").Get(ctx, group, scale)).To(Succeed())
		scale.Spec.Replicas = 3
		err = env.Client.SubResource("scale").Update(ctx, group, client.WithSubResourceBody(scale))
		Expect(err).To(HaveOccurred(), "a scaling group of a queued PodCliqueSet was scaled beyond its quota")
		Expect(err.Error()).To(ContainSubstring(`spec.replicas: Forbidden: may be at most 2: PodCliqueSet %s/grouped is queued through Kueue`, ns))
		Consistently(func(g Gomega) {
			g.Expect(env.LivePods(ctx, g, ns, "grouped")).To(HaveLen(14))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("holds a Workload deleted under a running PodCliqueSet until its pods are gone and its templates restored, "+
		"then queues the PodCliqueSet again with a new Workload", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-wldel", "2", false)
		// Strict FIFO: the quota given back goes to the oldest waiting
		// Workload first, not to one created after it.
		updateClusterQueue(ctx, queues.ClusterQueue, func(cq *kueue.ClusterQueue) { cq.Spec.QueueingStrategy = kueue.StrictFIFO })
		Expect(env.Client.Create(ctx, queuedPCS(ns, "orphaned", queues.ClusterQueue, 1, "1"))).To(Succeed())
		readyPods(ctx, ns, "orphaned", 1)
		old := workloadOf(ctx, Default, ns, "orphaned")
		Expect(old.Finalizers).To(ContainElement(kueue.ResourceInUseFinalizerName))

		By("a second PodCliqueSet needs the whole quota: it waits, first in the queue, for the first's to be given back")
		Expect(env.Client.Create(ctx, queuedPCS(ns, "waiter", queues.ClusterQueue, 1, "2"))).To(Succeed())
		expectAdmitted(ctx, ns, "waiter", metav1.ConditionFalse, copsev1alpha1.ReasonPending, "insufficient unused quota for cpu")

		By("the Workload is deleted: the finalizer keeps it, and its quota, until the pods of the run are gone")
		Expect(env.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID})).To(Succeed())
		heldWhilePodsRan := false
		Eventually(func(g Gomega) {
			// Fresh reads from the API server, in this order: the quota given
			// back (the waiting PodCliqueSet admitted, or the Workload gone)
			// first, the pods of the run after. A pod of that run seen after
			// the quota was given back broke the rule.
			waiterAdmitted := isAdmitted(ctx, g, ns, "waiter")
			current := &kueue.Workload{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), current)
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			oldGone := apierrors.IsNotFound(err) || current.UID != old.UID
			running := runPods(ctx, g, ns, "orphaned", "0")
			if len(running) > 0 && (oldGone || waiterAdmitted) {
				StopTrying(fmt.Sprintf("the quota was given back (Workload gone: %v, the waiting PodCliqueSet admitted: %v) while %d pods of the run held their nodes",
					oldGone, waiterAdmitted, len(running))).Now()
			}
			if !oldGone && len(running) > 0 && !current.DeletionTimestamp.IsZero() {
				heldWhilePodsRan = true
				g.Expect(current.Finalizers).To(ContainElement(kueue.ResourceInUseFinalizerName))
			}
			g.Expect(oldGone).To(BeTrue(), "the deleted Workload is still there")
		}).WithContext(ctx).WithTimeout(pcsWait).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(heldWhilePodsRan).To(BeTrue(), "the deleted Workload was never seen held by its finalizer while the pods of its run remained")

		By("the quota went to the waiting PodCliqueSet; the new Workload waits, built from templates restored to what they were before the admission")
		readyPods(ctx, ns, "waiter", 1)
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, ns, "orphaned")
			g.Expect(wl.UID).NotTo(Equal(old.UID), "no new Workload yet")
			g.Expect(wl.Finalizers).To(ContainElement(kueue.ResourceInUseFinalizerName))
			g.Expect(apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved)).To(BeFalse(), "the new Workload got quota before the older waiting one")
			for _, podSet := range wl.Spec.PodSets {
				g.Expect(podSet.Template.Labels).NotTo(HaveKey(copsekueue.PodSetLabel), "pod set %s", podSet.Name)
				g.Expect(podSet.Template.Spec.NodeSelector).To(BeEmpty(), "pod set %s", podSet.Name)
				g.Expect(podSet.Template.Spec.Tolerations).To(BeEmpty(), "pod set %s", podSet.Name)
			}
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		pcs := env.GetPodCliqueSet(ctx, Default, ns, "orphaned")
		Expect(pcs.IsSuspended()).To(BeTrue())
		expectRestored(pcs)
		Eventually(func() []string { return events(ctx, ns, "orphaned", copsekueue.EventEvicted) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(ContainElement(ContainSubstring("being deleted")))
		Eventually(func() []string { return events(ctx, ns, "orphaned", copsekueue.EventRequeued) }).
			WithContext(ctx).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())

		By("the waiting PodCliqueSet succeeds; the new Workload is admitted and the first runs again, a new attempt, with no restart spent")
		for _, pod := range readyPods(ctx, ns, "waiter", 1) {
			env.MakePodExit(ctx, &pod, "0")
		}
		pods := readyPods(ctx, ns, "orphaned", 1)
		Expect(pods[0].Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"))
		Expect(pods[0].Spec.Tolerations).To(ContainElement(flavorToleration))
		pcs = env.GetPodCliqueSet(ctx, Default, ns, "orphaned")
		Expect(pcs.Status.RestartCount).To(BeZero())
		Expect(pcs.Status.LastFailure).To(BeNil())
	})

	It("starts a PodCliqueSet whose Workload was deleted on the flavor its new Workload is admitted to, "+
		"another than the first one's", func(ctx context.Context) {
		blockA, blockB := "zone-0-block-0", "zone-0-block-1"
		ns, queues := newQueues(ctx, "kueue-pcs-flavors", "1", false, func(q *framework.KueueQueues) {
			q.Flavor.NodeLabels = map[string]string{cluster.LabelType: cluster.TypeKwok, cluster.LabelBlock: blockA}
		})
		By("the ClusterQueue has a second flavor, on other nodes, after the first")
		flavorB := &kueue.ResourceFlavor{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-b"},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok, cluster.LabelBlock: blockB},
				Tolerations: []corev1.Toleration{flavorToleration}},
		}
		Expect(env.Client.Create(ctx, flavorB)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			// Kueue keeps it until the ClusterQueue (deleted next) is gone.
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, flavorB))).To(Succeed())
		})
		updateClusterQueue(ctx, queues.ClusterQueue, func(cq *kueue.ClusterQueue) {
			b := *cq.Spec.ResourceGroups[0].Flavors[0].DeepCopy()
			b.Name = kueue.ResourceFlavorReference(flavorB.Name)
			cq.Spec.ResourceGroups[0].Flavors = append(cq.Spec.ResourceGroups[0].Flavors, b)
		})
		Expect(framework.WaitKueueQueuesActive(ctx, env.Client, queues)).To(Succeed())

		By("the PodCliqueSet is admitted to the first flavor and runs on its nodes")
		Expect(env.Client.Create(ctx, queuedPCS(ns, "mover", queues.ClusterQueue, 1, "1"))).To(Succeed())
		pods := readyPods(ctx, ns, "mover", 1)
		Expect(pods[0].Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelBlock, blockA))
		old := workloadOf(ctx, Default, ns, "mover")

		By("the first flavor leaves the ClusterQueue, and the Workload is deleted")
		updateClusterQueue(ctx, queues.ClusterQueue, func(cq *kueue.ClusterQueue) {
			cq.Spec.ResourceGroups[0].Flavors = cq.Spec.ResourceGroups[0].Flavors[1:]
		})
		Expect(env.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID})).To(Succeed())

		By("the new Workload is admitted to the second flavor, and the PodCliqueSet runs on its nodes")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, ns, "mover")
			g.Expect(wl.UID).NotTo(Equal(old.UID))
			g.Expect(wl.Status.Admission).NotTo(BeNil())
			g.Expect(wl.Status.Admission.PodSetAssignments).To(HaveLen(1))
			g.Expect(wl.Status.Admission.PodSetAssignments[0].Flavors).To(HaveKeyWithValue(corev1.ResourceCPU, kueue.ResourceFlavorReference(flavorB.Name)))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		pods = readyPods(ctx, ns, "mover", 1)
		Expect(pods[0].Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelBlock, blockB))
		Expect(pods[0].Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"))
		expectAdmitted(ctx, ns, "mover", metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted, "")
		Expect(apimeta.IsStatusConditionTrue(workloadOf(ctx, Default, ns, "mover").Status.Conditions, kueue.WorkloadFinished)).To(BeFalse())
	})

	It("deletes the Workload of a PodCliqueSet taken out of its queue once its pods are gone and its templates restored, "+
		"then removes its Admitted condition", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-leave", "1", false)
		Expect(env.Client.Create(ctx, queuedPCS(ns, "leaver", queues.ClusterQueue, 1, "1"))).To(Succeed())
		readyPods(ctx, ns, "leaver", 1)
		old := workloadOf(ctx, Default, ns, "leaver")

		By("suspended and taken out of its queue in one update")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "leaver")
			pcs.Spec.Suspend = ptr.To(true)
			delete(pcs.Labels, copsekueue.QueueNameLabel)
			g.Expect(env.Client.Update(ctx, pcs)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			current := &kueue.Workload{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), current)
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			running := runPods(ctx, g, ns, "leaver", "0")
			if apierrors.IsNotFound(err) && len(running) > 0 {
				StopTrying(fmt.Sprintf("the Workload went while %d pods of the run held their nodes", len(running))).Now()
			}
			g.Expect(err).To(Satisfy(apierrors.IsNotFound), "the Workload is still there")
		}).WithContext(ctx).WithTimeout(pcsWait).WithPolling(100 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) {
			left := env.GetPodCliqueSet(ctx, g, ns, "leaver")
			g.Expect(apimeta.FindStatusCondition(left.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)).To(BeNil())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		left := env.GetPodCliqueSet(ctx, Default, ns, "leaver")
		Expect(left.IsSuspended()).To(BeTrue())
		expectRestored(left)
		Consistently(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &kueue.Workload{})).To(Satisfy(apierrors.IsNotFound), "a Workload was created again")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("releases the Workload with its PodCliqueSet, and gives a PodCliqueSet created again under the same name a new one", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-pcs-gc", "1", false)
		pcs := queuedPCS(ns, "short-lived", queues.ClusterQueue, 1, "100m")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		readyPods(ctx, ns, "short-lived", 1)
		wl := workloadOf(ctx, Default, ns, "short-lived")
		Expect(wl.Finalizers).To(ContainElement(kueue.ResourceInUseFinalizerName))

		By("the PodCliqueSet is deleted while it runs: its Workload goes, not held by the finalizer")
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(wl), &kueue.Workload{})
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Satisfy(apierrors.IsNotFound))
		// The Workload can go before the garbage collector deletes the pods:
		// a pod of the deleted PodCliqueSet still Ready would pass for one of
		// the next (both carry its name).
		Eventually(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "short-lived")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())

		By("deleted and created again at once under the same name: the earlier Workload goes and the new PodCliqueSet runs with its own")
		again := queuedPCS(ns, "short-lived", queues.ClusterQueue, 1, "100m")
		Expect(env.Client.Create(ctx, again)).To(Succeed())
		earlierPods := readyPods(ctx, ns, "short-lived", 1)
		earlier := workloadOf(ctx, Default, ns, "short-lived")
		Expect(env.Client.Delete(ctx, again)).To(Succeed())
		Eventually(func() error {
			return env.Client.Create(ctx, queuedPCS(ns, "short-lived", queues.ClusterQueue, 1, "100m"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			current := workloadOf(ctx, g, ns, "short-lived")
			g.Expect(current.UID).NotTo(Equal(earlier.UID))
			g.Expect(metav1.IsControlledBy(current, env.GetPodCliqueSet(ctx, g, ns, "short-lived"))).To(BeTrue())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		Eventually(func(g Gomega) {
			live := env.LivePods(ctx, g, ns, "short-lived")
			g.Expect(live).To(HaveLen(1))
			g.Expect(live[0].UID).NotTo(Equal(earlierPods[0].UID), "the earlier PodCliqueSet's pod is still the one running")
			g.Expect(framework.IsReady(&live[0])).To(BeTrue())
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
	})
})

// newQueues creates a namespace and a ClusterQueue of cpu quota with one
// flavor (nodes labelled type=kwok, flavorToleration), a LocalQueue in the
// namespace, and the WorkloadPriorityClasses low (10) and high (1000);
// adjust, if any, changes them before they are created.
func newQueues(ctx context.Context, prefix, cpu string, preempt bool, adjust ...func(*framework.KueueQueues)) (string, framework.KueueQueues) {
	GinkgoHelper()
	ns := env.NewNamespace(ctx, prefix)
	queues := framework.KueueQueues{
		ClusterQueue: ns,
		Flavor: framework.KueueFlavor{Name: ns, NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok},
			Tolerations: []corev1.Toleration{flavorToleration}},
		Quota:                corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		PreemptLowerPriority: preempt,
		Namespaces:           []string{ns},
		PriorityClasses:      map[string]int32{ns + "-low": 10, ns + "-high": 1000},
	}
	for _, change := range adjust {
		change(&queues)
	}
	Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { releaseQueues(ctx, ns, queues, pcsWait) })
	return ns, queues
}

// podSpec is a pod of one container requesting cpu that runs until told to
// exit (framework.Env.MakePodExit).
func podSpec(cpu string) corev1.PodSpec {
	spec := framework.PodSpec(0)
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return spec
}

// queuedPCS is a Training PodCliqueSet of one replica of workers pods
// requesting cpu each, in LocalQueue queue, with no restart allowed: a pod
// failure would fail it at once.
func queuedPCS(namespace, name, queue string, workers int32, cpu string) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewTrainingPodCliqueSet(namespace, name, 1, 0, framework.CliqueTemplate("worker", workers, podSpec(cpu)))
	pcs.Labels = map[string]string{copsekueue.QueueNameLabel: queue}
	return pcs
}

// readyPods waits until the PodCliqueSet has n live pods, all Ready, and
// returns them.
func readyPods(ctx context.Context, namespace, pcsName string, n int) []corev1.Pod {
	GinkgoHelper()
	return env.ReadyPods(ctx, namespace, pcsName, n, pcsWait)
}

// workloadOf reads the PodCliqueSet's Kueue Workload.
func workloadOf(ctx context.Context, g Gomega, namespace, pcsName string) *kueue.Workload {
	wl := &kueue.Workload{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: copsekueue.WorkloadName(pcsName)}, wl)).To(Succeed())
	return wl
}

// expectAdmitted waits for the PodCliqueSet's Admitted condition.
func expectAdmitted(ctx context.Context, namespace, pcsName string, status metav1.ConditionStatus, reason, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cond := apimeta.FindStatusCondition(env.GetPodCliqueSet(ctx, g, namespace, pcsName).Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), cond.Message)
		g.Expect(cond.Reason).To(Equal(reason), cond.Message)
		g.Expect(cond.Message).To(ContainSubstring(message))
	}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
}

// events are the notes of the events with reason about the PodCliqueSet.
func events(ctx context.Context, namespace, pcsName, reason string) []string {
	GinkgoHelper()
	var out []string
	for _, ev := range env.EventsWithReason(ctx, Default, namespace, reason) {
		if ev.Regarding.Kind == "PodCliqueSet" && ev.Regarding.Name == pcsName {
			out = append(out, ev.Note)
		}
	}
	return out
}

// updateClusterQueue changes the ClusterQueue's spec.
func updateClusterQueue(ctx context.Context, name string, change func(*kueue.ClusterQueue)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cq := &kueue.ClusterQueue{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		change(cq)
		g.Expect(env.Client.Update(ctx, cq)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// isAdmitted reads whether the PodCliqueSet's Workload is admitted (false
// when it has none).
func isAdmitted(ctx context.Context, g Gomega, namespace, pcsName string) bool {
	wl := &kueue.Workload{}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: copsekueue.WorkloadName(pcsName)}, wl)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
}

// runPods are the pods of the PodCliqueSet's run attempt that may still
// hold their nodes (not ended; terminating ones included).
func runPods(ctx context.Context, g Gomega, namespace, pcsName, attempt string) []corev1.Pod {
	var out []corev1.Pod
	for _, pod := range env.Pods(ctx, g, namespace, pcsName, client.MatchingLabels{labels.AttemptKey: attempt}) {
		if podstate.Of(&pod).HoldsNode() {
			out = append(out, pod)
		}
	}
	return out
}

// expectRestored: the PodCliqueSet's clique templates carry no admission
// (no podset label, none of the flavor's node labels or tolerations), as
// they were created.
func expectRestored(pcs *copsev1alpha1.PodCliqueSet) {
	GinkgoHelper()
	for _, clique := range pcs.Spec.Template.Cliques {
		Expect(clique.Labels).NotTo(HaveKey(copsekueue.PodSetLabel), "clique %s keeps the admission", clique.Name)
		Expect(clique.Spec.PodSpec.NodeSelector).To(BeEmpty(), "clique %s", clique.Name)
		Expect(clique.Spec.PodSpec.Tolerations).NotTo(ContainElement(flavorToleration), "clique %s", clique.Name)
	}
}
