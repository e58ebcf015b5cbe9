package training_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// launcherJob is a Training PodCliqueSet of one replica: a launcher clique
// of one pod that exits 0 after launcherRuns, and a worker clique of
// workers pods that never exit, which succeeds by policy.
func launcherJob(namespace string, workers int32, launcherRuns string, op copsev1alpha1.SuccessPolicyOperator) *copsev1alpha1.PodCliqueSet {
	launcher := framework.CliqueTemplate("launcher", 1, framework.PodSpec(0))
	launcher.Annotations = map[string]string{cluster.AnnotationRunDuration: launcherRuns, cluster.AnnotationExitCode: "0"}
	worker := framework.CliqueTemplate("worker", workers, framework.PodSpec(0))
	pcs := framework.NewPodCliqueSet(namespace, "job", 1, launcher, worker)
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](2),
		SuccessPolicy: &copsev1alpha1.SuccessPolicy{Operator: op, TargetCliques: []string{"launcher"}}}
	return pcs
}

// groupedJob is a Training PodCliqueSet of replicas replicas, each a
// leader pod and a scaling group "workers" of two replicas of one worker
// pod, every pod exiting 0 after runFor.
func groupedJob(namespace string, replicas int32, runFor string) *copsev1alpha1.PodCliqueSet {
	leader := framework.CliqueTemplate("leader", 1, framework.PodSpec(0))
	leader.Annotations = map[string]string{cluster.AnnotationRunDuration: runFor, cluster.AnnotationExitCode: "0"}
	worker := framework.CliqueTemplate("worker", 1, framework.PodSpec(0))
	worker.Annotations = map[string]string{cluster.AnnotationRunDuration: runFor, cluster.AnnotationExitCode: "0"}
	pcs := framework.NewTrainingPodCliqueSet(namespace, "job", replicas, 1, leader, worker)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
	}
	return pcs
}

func setSuspend(ctx context.Context, namespace, name string, suspend bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
		patch := client.MergeFrom(pcs.DeepCopy())
		pcs.Spec.Suspend = ptr.To(suspend)
		g.Expect(env.Client.Patch(ctx, pcs, patch)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// podGroupUIDs are the namespace's PodGroups, by name.
func podGroupUIDs(ctx context.Context, g Gomega, namespace string) map[string]types.UID {
	var groups schedulingv1beta1.PodGroupList
	g.Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
	out := map[string]types.UID{}
	for _, pg := range groups.Items {
		out[pg.Name] = pg.UID
	}
	return out
}

// runObjects counts the namespace's PodCliques and PodCliqueScalingGroups.
func runObjects(ctx context.Context, g Gomega, namespace string) int {
	var cliques copsev1alpha1.PodCliqueList
	g.Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace))).To(Succeed())
	var groups copsev1alpha1.PodCliqueScalingGroupList
	g.Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
	return len(cliques.Items) + len(groups.Items)
}

// replicaZeroMeetsThePolicy runs a launcherJob of 2 replicas of 2 workers
// each, until replica 0's launcher has exited 0 and its PodClique
// succeeded: replica 0 met the success policy, its workers linger, replica
// 1 still runs.
func replicaZeroMeetsThePolicy(ctx context.Context, namespace string) {
	GinkgoHelper()
	pcs := launcherJob(namespace, 2, "1h", copsev1alpha1.SuccessPolicyOperatorAny)
	pcs.Spec.Replicas = 2
	Expect(env.Client.Create(ctx, pcs)).To(Succeed())
	runningPods(ctx, namespace, "job", "0", "0", 3)
	runningPods(ctx, namespace, "job", "1", "0", 3)
	waitStartTime(ctx, namespace, "job")
	launcher0 := env.LivePods(ctx, Default, namespace, "job", client.MatchingLabels{labels.ReplicaKey: "0", labels.CliqueTemplateKey: "launcher"})
	Expect(launcher0).To(HaveLen(1))
	env.MakePodExit(ctx, &launcher0[0], "0")
	Eventually(func(g Gomega) {
		pclq := &copsev1alpha1.PodClique{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "job-0-launcher"}, pclq)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
}

// expectNamespaceDeleted deletes the namespace and waits until it is gone.
func expectNamespaceDeleted(ctx context.Context, namespace string) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s still there: %v; pods: %s", namespace, err, describePods(env.Pods(ctx, g, namespace, "job")))
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
}

// describePods names each pod with its phase, deletion state and finalizers.
func describePods(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s (%s, deleting %v, finalizers %v)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, p.Finalizers))
	}
	return strings.Join(out, "; ")
}

// killOperatorAndReach SIGKILLs the operator, then lets the node of the
// pod stuck terminating answer again, so the pod ends while the operator
// is down.
func killOperatorAndReach(ctx context.Context, stuck *corev1.Pod) {
	GinkgoHelper()
	Expect(env.Operator.Kill()).To(Succeed())
	p := &corev1.Pod{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stuck), p)).To(Succeed())
	setAnnotation(ctx, p, cluster.AnnotationUnreachable, "false")
}

func condition(pcs *copsev1alpha1.PodCliqueSet, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(pcs.Status.Conditions, conditionType)
}

// expectSuccessCriteriaMet asserts SuccessCriteriaMet=True, by the launcher,
// and no failure, and returns the condition.
func expectSuccessCriteriaMet(g Gomega, pcs *copsev1alpha1.PodCliqueSet) *metav1.Condition {
	met := condition(pcs, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
	g.Expect(met).NotTo(BeNil())
	g.Expect(met.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(met.Reason).To(Equal(copsev1alpha1.ReasonSuccessPolicy))
	g.Expect(met.Message).To(ContainSubstring("job-0-launcher"))
	g.Expect(failedCondition(pcs)).To(BeNil(), "never Failed after SuccessCriteriaMet")
	g.Expect(pcs.Status.RestartCount).To(BeZero())
	return met
}

// expectSuspendedAndEmpty asserts the state of a suspension that removed
// every pod: no pod and no PodClique or scaling group left, the gangs as
// they were, restartCount kept, startTime cleared, phase Pending, each
// replica's recreation recorded with reason Suspension and completed.
func expectSuspendedAndEmpty(g Gomega, ctx context.Context, namespace string, replicas int, restartCount int32, podGroups map[string]types.UID) {
	g.Expect(env.Pods(ctx, g, namespace, "job")).To(BeEmpty())
	g.Expect(runObjects(ctx, g, namespace)).To(BeZero(), "the PodCliques and scaling groups of the run are gone")
	g.Expect(podGroupUIDs(ctx, g, namespace)).To(Equal(podGroups), "the PodGroups stay, the same objects")
	pcs := env.GetPodCliqueSet(ctx, g, namespace, "job")
	g.Expect(pcs.Status.RestartCount).To(Equal(restartCount))
	g.Expect(pcs.Status.StartTime).To(BeNil())
	g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhasePending))
	g.Expect(pcs.Status.LastFailure).To(BeNil())
	g.Expect(failedCondition(pcs)).To(BeNil())
	cond := condition(pcs, copsev1alpha1.ConditionTypeSuspended)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonSuspended))
	g.Expect(cond.Message).To(ContainSubstring("no pod is left"))
	g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(replicas))
	for _, rec := range pcs.Status.ReplicaRecreations {
		g.Expect(rec.Reason).To(Equal(copsev1alpha1.RecreationReasonSuspension))
		g.Expect(rec.Attempt).To(Equal(int32(1)))
		g.Expect(rec.CompletedAt).NotTo(BeNil())
	}
}

var _ = Describe("Success policy", Label("training"), func() {
	DescribeTable("a launcher that exits 0 ends the workload, its workers terminated",
		func(ctx context.Context, op copsev1alpha1.SuccessPolicyOperator) {
			ns := env.NewNamespace(ctx, "success-policy")
			Expect(env.Client.Create(ctx, launcherJob(ns, 3, "6s", op))).To(Succeed())
			By("the workers running before the launcher exits")
			Eventually(func(g Gomega) {
				workers := env.LivePods(ctx, g, ns, "job", client.MatchingLabels{labels.CliqueTemplateKey: "worker"})
				g.Expect(workers).To(HaveLen(3))
				for i := range workers {
					g.Expect(framework.IsReady(&workers[i])).To(BeTrue())
				}
				g.Expect(condition(env.GetPodCliqueSet(ctx, g, ns, "job"), copsev1alpha1.ConditionTypeSuccessCriteriaMet)).To(BeNil())
			}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

			Eventually(func(g Gomega) {
				pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
				g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
				expectSuccessCriteriaMet(g, pcs)
			}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

			By("leaving only the launcher's pod, which exited 0; the workers are gone")
			Eventually(func(g Gomega) {
				pods := env.Pods(ctx, g, ns, "job")
				g.Expect(pods).To(HaveLen(1))
				g.Expect(pods[0].Labels[labels.CliqueTemplateKey]).To(Equal("launcher"))
				g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodSucceeded))
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(env.EventsWithReason(ctx, g, ns, "SuccessCriteriaMet")).To(HaveLen(1))
				g.Expect(env.EventsWithReason(ctx, g, ns, "WorkloadSucceeded")).To(HaveLen(1))
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			Consistently(func(g Gomega) {
				pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
				g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
				expectSuccessCriteriaMet(g, pcs)
				g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty(), "no worker is replaced")
			}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		},
		Entry("Any of [launcher]", copsev1alpha1.SuccessPolicyOperatorAny),
		Entry("All of [launcher]", copsev1alpha1.SuccessPolicyOperatorAll),
	)
})

var _ = Describe("Suspend", Label("training"), func() {
	It("removes every pod of a running Training workload, keeps its gangs and restartCount, and resumes it to success", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "suspend")
		Expect(env.Client.Create(ctx, groupedJob(ns, 2, "15s"))).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 3)
		runningPods(ctx, ns, "job", "1", "0", 3)
		waitStartTime(ctx, ns, "job")
		podGroups := podGroupUIDs(ctx, Default, ns)
		Expect(podGroups).NotTo(BeEmpty())

		By("suspending")
		setSuspend(ctx, ns, "job", true)
		Eventually(func(g Gomega) {
			expectSuspendedAndEmpty(g, ctx, ns, 2, 0, podGroups)
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "Suspended")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			expectSuspendedAndEmpty(g, ctx, ns, 2, 0, podGroups)
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("resuming: a new attempt runs, in the same gangs, and succeeds")
		resumed := time.Now().Add(-time.Second)
		setSuspend(ctx, ns, "job", false)
		runningPods(ctx, ns, "job", "0", "1", 3)
		runningPods(ctx, ns, "job", "1", "1", 3)
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			g.Expect(pcs.Status.StartTime).NotTo(BeNil())
			g.Expect(pcs.Status.StartTime.Time).To(BeTemporally(">=", resumed.Truncate(time.Second)), "startTime is the resumed run's")
			cond := condition(pcs, copsev1alpha1.ConditionTypeSuspended)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonResumed))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(podGroupUIDs(ctx, Default, ns)).To(Equal(podGroups))
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(failedCondition(pcs)).To(BeNil())
			g.Expect(env.EventsWithReason(ctx, g, ns, "Resumed")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		for _, p := range env.Pods(ctx, Default, ns, "job") {
			Expect(p.Labels[labels.AttemptKey]).To(Equal("1"), "pod %s", p.Name)
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
		}
	})

	It("ends every pod of a suspended run, the lingering pods of a replica that met the success policy included, keeps that replica's result", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "suspend-policy")
		replicaZeroMeetsThePolicy(ctx, ns)
		Eventually(func(g Gomega) {
			g.Expect(env.LivePods(ctx, g, ns, "job", client.MatchingLabels{labels.ReplicaKey: "0", labels.CliqueTemplateKey: "worker"})).To(HaveLen(2))
			g.Expect(condition(env.GetPodCliqueSet(ctx, g, ns, "job"), copsev1alpha1.ConditionTypeSuccessCriteriaMet)).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("suspending ends every pod, the lingering workers of replica 0 too: startTime clears")
		setSuspend(ctx, ns, "job", true)
		Eventually(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhasePending))
			g.Expect(got.Status.StartTime).To(BeNil())
			cond := condition(got, copsev1alpha1.ConditionTypeSuspended)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(ContainSubstring("no pod is left"))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		pclq := &copsev1alpha1.PodClique{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-launcher"}, pclq)).To(Succeed(), "replica 0 keeps its result")
		Expect(meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)).To(BeTrue())

		By("resuming: replica 1 runs a new attempt; replica 0, done, gets no pod")
		resumed := time.Now().Add(-time.Second)
		setSuspend(ctx, ns, "job", false)
		runningPods(ctx, ns, "job", "1", "1", 3)
		Consistently(func(g Gomega) {
			for _, p := range env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.ReplicaKey: "0"}) {
				g.Expect(framework.IsTerminal(&p)).To(BeTrue(), "pod %s of replica 0 runs", p.Name)
				g.Expect(p.CreationTimestamp.Time).To(BeTemporally("<", resumed), "pod %s of replica 0 was created after the resume", p.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("replica 1's launcher exits 0: the workload succeeds")
		launcher1 := env.LivePods(ctx, Default, ns, "job", client.MatchingLabels{labels.ReplicaKey: "1", labels.CliqueTemplateKey: "launcher"})
		Expect(launcher1).To(HaveLen(1))
		env.MakePodExit(ctx, &launcher1[0], "0")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(got.Status.RestartCount).To(BeZero())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	DescribeTable("lets the namespace of a Training workload be deleted on its own (Kubernetes deletes its pods before their owners)",
		func(ctx context.Context, setup func(ctx context.Context, namespace string)) {
			ns := env.NewNamespace(ctx, "delete-ns")
			setup(ctx, ns)
			expectNamespaceDeleted(ctx, ns)
		},
		Entry("running", func(ctx context.Context, ns string) {
			Expect(env.Client.Create(ctx, launcherJob(ns, 2, "1h", copsev1alpha1.SuccessPolicyOperatorAny))).To(Succeed())
			runningPods(ctx, ns, "job", "0", "0", 3)
		}),
		Entry("whose breach waits out a long terminationDelay", func(ctx context.Context, ns string) {
			pcs := launcherJob(ns, 2, "1h", copsev1alpha1.SuccessPolicyOperatorAny)
			pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Hour}
			Expect(env.Client.Create(ctx, pcs)).To(Succeed())
			runningPods(ctx, ns, "job", "0", "0", 3)
		}),
		Entry("running, with a replica that met its success policy", func(ctx context.Context, ns string) {
			replicaZeroMeetsThePolicy(ctx, ns)
		}),
		Entry("suspended, with a replica that met its success policy", func(ctx context.Context, ns string) {
			replicaZeroMeetsThePolicy(ctx, ns)
			setSuspend(ctx, ns, "job", true)
		}),
	)

	It("creates no pod for a Training workload created suspended, until it is resumed", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "created-suspended")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 2, "2s", 0)
		pcs.Spec.Suspend = ptr.To(true)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			cond := condition(got, copsev1alpha1.ConditionTypeSuspended)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhasePending))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "job")).To(BeEmpty())
			g.Expect(runObjects(ctx, g, ns)).To(BeZero())
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.StartTime).To(BeNil())
			g.Expect(got.Status.ReplicaRecreations).To(BeEmpty(), "nothing ran, so nothing is recreated")
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())

		setSuspend(ctx, ns, "job", false)
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(got.Status.RestartCount).To(BeZero())
			g.Expect(env.Pods(ctx, g, ns, "job")).To(HaveLen(2))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("suspends and resumes an Inference workload", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "suspend-inference")
		Expect(env.Client.Create(ctx, framework.NewPodCliqueSet(ns, "job", 1, framework.CliqueTemplate("server", 2, framework.PodSpec(0))))).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 2)
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		podGroups := podGroupUIDs(ctx, Default, ns)
		Expect(podGroups).NotTo(BeEmpty())

		setSuspend(ctx, ns, "job", true)
		Eventually(func(g Gomega) {
			expectSuspendedAndEmpty(g, ctx, ns, 1, 0, podGroups)
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		setSuspend(ctx, ns, "job", false)
		runningPods(ctx, ns, "job", "0", "1", 2)
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(condition(pcs, copsev1alpha1.ConditionTypeSuspended).Reason).To(Equal(copsev1alpha1.ReasonResumed))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(podGroupUIDs(ctx, Default, ns)).To(Equal(podGroups))
	})
})

var _ = Describe("Suspend and success policy: operator crash safety", Label("training"), Ordered, func() {
	AfterEach(restartOperatorIfKilled)

	It("ends Succeeded when killed after SuccessCriteriaMet, before the workers are gone", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "crash-success-policy")
		Expect(env.Client.Create(ctx, launcherJob(ns, 2, "10s", copsev1alpha1.SuccessPolicyOperatorAny))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)
		var stuck corev1.Pod
		for _, p := range pods {
			if p.Labels[labels.CliqueTemplateKey] == "worker" {
				stuck = p
			}
		}
		Expect(stuck.Name).NotTo(BeEmpty())
		setAnnotation(ctx, &stuck, cluster.AnnotationUnreachable, "true")

		By("waiting for SuccessCriteriaMet while a worker is still terminating")
		var metAt metav1.Time
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			metAt = expectSuccessCriteriaMet(g, pcs).LastTransitionTime
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning), "not Succeeded while a worker holds its node")
			p := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&stuck), p)).To(Succeed())
			g.Expect(p.DeletionTimestamp).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("killing the operator, and letting the worker end while it is down")
		killOperatorAndReach(ctx, &stuck)
		Eventually(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning),
			"nothing can have observed the end while the operator was down")
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("finding exactly: Succeeded, no pod running, SuccessCriteriaMet as written, no restart, never Failed")
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Consistently(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(expectSuccessCriteriaMet(g, pcs).LastTransitionTime.Time).To(BeTemporally("==", metAt.Time), "the condition as written before the crash")
			g.Expect(pcs.Status.ReplicaRecreations).To(BeEmpty())
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
			pods := env.Pods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Labels[labels.CliqueTemplateKey]).To(Equal("launcher"))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("completes a suspension once when killed in the middle of it, and resumes", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "crash-suspend")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 2, "", 1))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		waitStartTime(ctx, ns, "job")
		podGroups := podGroupUIDs(ctx, Default, ns)
		Expect(podGroups).NotTo(BeEmpty())
		stuck := pods[1]
		setAnnotation(ctx, &stuck, cluster.AnnotationUnreachable, "true")

		setSuspend(ctx, ns, "job", true)
		By("waiting until the suspension is recorded and one pod is still going away")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
			rec := pcs.Status.ReplicaRecreations[0]
			g.Expect(rec.Reason).To(Equal(copsev1alpha1.RecreationReasonSuspension))
			g.Expect(rec.CompletedAt).To(BeNil())
			cond := condition(pcs, copsev1alpha1.ConditionTypeSuspended)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(ContainSubstring("1 pod(s) are still going away"))
			g.Expect(pcs.Status.StartTime).NotTo(BeNil(), "kept while a pod is still going away")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("killing the operator mid-suspension, letting the last pod end while it is down")
		killOperatorAndReach(ctx, &stuck)
		Eventually(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "job")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("finding exactly: one completed suspension, no pod, no PodClique, the same PodGroups, restartCount 0, no startTime")
		Eventually(func(g Gomega) {
			expectSuspendedAndEmpty(g, ctx, ns, 1, 0, podGroups)
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Consistently(func(g Gomega) {
			expectSuspendedAndEmpty(g, ctx, ns, 1, 0, podGroups)
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		setSuspend(ctx, ns, "job", false)
		runningPods(ctx, ns, "job", "0", "1", 2)
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(pcs.Status.StartTime).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectNoOrphans(ctx, ns, "job")
	})
})

var _ = Describe("Success policy and suspend admission (webhook)", Label("training"), func() {
	It("rejects a target that is no clique and a changed policy, and accepts suspend changes", func(ctx context.Context) {
		const validatePodCliqueSet = "validate.podcliquesets.grove.io"
		ns := env.NewNamespace(ctx, "policy-admission")
		typo := launcherJob(ns, 1, "1h", copsev1alpha1.SuccessPolicyOperatorAll)
		typo.Spec.TrainingSpec.SuccessPolicy.TargetCliques = []string{"launchr"}
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, typo), validatePodCliqueSet,
			`spec.trainingSpec.successPolicy.targetCliques[0]: Invalid value: "launchr": must name a clique of spec.template.cliques: one of ["launcher" "worker"]`)

		pcs := launcherJob(ns, 1, "1h", copsev1alpha1.SuccessPolicyOperatorAll)
		pcs.Spec.Suspend = ptr.To(true)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		// The status writes of the operator may make an update conflict;
		// the rule is checked on an update from the latest version.
		var err error
		Eventually(func() bool {
			changed := env.GetPodCliqueSet(ctx, Default, ns, "job")
			changed.Spec.TrainingSpec.SuccessPolicy.Operator = copsev1alpha1.SuccessPolicyOperatorAny
			err = env.Client.Update(ctx, changed)
			return !apierrors.IsConflict(err)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet,
			"spec.trainingSpec.successPolicy: Invalid value", "field is immutable")
		setSuspend(ctx, ns, "job", false)
		setSuspend(ctx, ns, "job", true)
	})
})
