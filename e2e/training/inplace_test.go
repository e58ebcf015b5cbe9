package training_test

import (
	"context"
	"strconv"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// inPlaceWorkers is a Training PodCliqueSet restarted in place: replicas of
// a leader and a scaling group of 2 x workers workers, each pod running
// runFor and exiting 0 ("": until made to exit, see MakePodExit).
func inPlaceWorkers(namespace string, replicas, workers, maxRestarts int32, runsFor string) *copsev1alpha1.PodCliqueSet {
	leader := framework.CliqueTemplate("leader", 1, framework.PodSpec(0))
	worker := framework.CliqueTemplate("worker", workers, framework.PodSpec(0))
	if runsFor != "" {
		leader.Annotations = runFor(runsFor, "0")
		worker.Annotations = runFor(runsFor, "0")
	}
	pcs := framework.NewTrainingPodCliqueSet(namespace, "job", replicas, maxRestarts, leader, worker)
	pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
	}
	return pcs
}

// restartedPods waits until the replica's restart in place to attempt
// lifted its barrier (every pod it kept restarted to its gate) and n pods
// of that attempt are ready, and returns them. Pods moved to the attempt
// are still ready with their old containers until the kubelet stops them.
func restartedPods(ctx context.Context, namespace, replica, attempt string, n int) []corev1.Pod {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, "job")
		g.Expect(pcs.Status.ReplicaRecreations).To(ContainElement(And(
			HaveField("ReplicaIndex", WithTransform(func(i int32) string { return strconv.Itoa(int(i)) }, Equal(replica))),
			HaveField("Attempt", WithTransform(func(i int32) string { return strconv.Itoa(int(i)) }, Equal(attempt))),
			HaveField("BarrierLiftedAt", Not(BeNil())))))
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	return runningPods(ctx, namespace, "job", replica, attempt, n)
}

// placedPod is what a restart in place must keep of a pod.
type placedPod struct {
	uid  types.UID
	node string
}

func placementOf(pods []corev1.Pod) map[string]placedPod {
	out := map[string]placedPod{}
	for _, p := range pods {
		out[p.Name] = placedPod{uid: p.UID, node: p.Spec.NodeName}
	}
	return out
}

// restartedInPlace checks what the kubelet (or its simulation) reports of a
// pod whose containers all restarted in place once: every container's
// restart count is 1 and its last state the RestartAllContainers stop.
func restartedInPlace(g Gomega, pod *corev1.Pod) {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			g.Expect(cs.RestartCount).To(Equal(int32(1)), "pod %s container %s", pod.Name, cs.Name)
			g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil(), "pod %s container %s", pod.Name, cs.Name)
			g.Expect(cs.LastTerminationState.Terminated.Reason).To(Equal(podstate.ReasonRestartingAllContainers), "pod %s container %s", pod.Name, cs.Name)
		}
	}
}

var _ = Describe("Training restart in place", Label("training"), func() {
	AfterEach(restartOperatorIfKilled)

	It("restarts only the failed replica, its running pods in place on their nodes, the failed one made anew, behind a barrier, then succeeds", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace")
		Expect(env.Client.Create(ctx, inPlaceWorkers(ns, 2, 2, 1, "20s"))).To(Succeed())
		replica0 := runningPods(ctx, ns, "job", "0", "0", 5)
		replica1 := runningPods(ctx, ns, "job", "1", "0", 5)
		for _, p := range replica1 {
			Expect(p.Spec.InitContainers).To(ContainElement(HaveField("Name", blueprint.RestartAgentContainer)), "pod %s has copse's restart agent", p.Name)
		}
		groupBefore := podGroupUID(ctx, ns, "job-1")

		failing := replica1[1]
		env.MakePodExit(ctx, &failing, "1")
		kept := placementOf(append(replica1[:1:1], replica1[2:]...))

		By("moving the kept pods of replica 1 to attempt 1, each in its pod, on its node")
		restarted := restartedPods(ctx, ns, "1", "1", 5)
		byName := placementOf(restarted)
		for name, was := range kept {
			Expect(byName).To(HaveKeyWithValue(name, was), "pod %s was not kept where it ran", name)
		}
		Expect(byName).NotTo(HaveKey(failing.Name), "the failed pod is made anew")
		for i := range restarted {
			if _, ok := kept[restarted[i].Name]; ok {
				restartedInPlace(Default, &restarted[i])
			}
		}
		Expect(podGroupUID(ctx, ns, "job-1")).To(Equal(groupBefore), "the replica's gang is kept")

		By("lifting the barrier once, before any container of attempt 1 started")
		pcs := env.GetPodCliqueSet(ctx, Default, ns, "job")
		Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
		Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
		rec := pcs.Status.ReplicaRecreations[0]
		Expect(rec.InPlace).To(BeTrue())
		Expect(rec.BarrierLiftedAt).NotTo(BeNil())
		for _, p := range restarted {
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.State.Running).NotTo(BeNil())
				Expect(cs.State.Running.StartedAt.Time).NotTo(BeTemporally("<", rec.BarrierLiftedAt.Truncate(time.Second)),
					"pod %s container %s started before the barrier lifted", p.Name, cs.Name)
			}
		}
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "RestartBarrierLifted")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("leaving replica 0 untouched")
		for _, p := range replica0 {
			still := &corev1.Pod{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), still)).To(Succeed())
			Expect(still.UID).To(Equal(p.UID))
			Expect(still.Labels[labels.AttemptKey]).To(Equal("0"))
		}

		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(got.Status.RestartCount).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectNoOrphans(ctx, ns, "job")
	})
})

// inPlaceRestartTimeout is the training suite's
// scheduler.inPlaceRestartTimeout (suite_test.go): long enough for every
// restart in place of the suite to lift its barrier, even with the operator
// killed meanwhile.
const inPlaceRestartTimeout = 30 * time.Second

var _ = Describe("Training restart in place whose kubelet never restarts a kept pod", Label("training"), func() {
	AfterEach(restartOperatorIfKilled)

	It("says why the gates stay closed, then recreates the replica after scheduler.inPlaceRestartTimeout without spending a restart, and succeeds", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-timeout")
		Expect(env.Client.Create(ctx, inPlaceWorkers(ns, 1, 1, 2, ""))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)
		var failing, agentLost *corev1.Pod
		for i := range pods {
			switch {
			case pods[i].Labels[labels.CliqueTemplateKey] == "leader":
				failing = &pods[i]
			case agentLost == nil:
				agentLost = &pods[i]
			}
		}
		Expect(failing).NotTo(BeNil())
		Expect(agentLost).NotTo(BeNil())
		setAnnotation(ctx, agentLost, cluster.AnnotationRestartAgentLost, "true")
		decided := time.Now()
		env.MakePodExit(ctx, failing, "1")

		By("holding the barrier of attempt 1, and saying so, while the pod that lost its agent runs its old containers")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.ReplicaRecreations).To(ConsistOf(And(HaveField("Attempt", int32(1)), HaveField("InPlace", true),
				HaveField("CompletedAt", Not(BeNil())), HaveField("BarrierLiftedAt", BeNil()))))
			expectBlocked(ctx, g, ns, "job-0-leader", copsev1alpha1.ReasonWaitingForPreviousAttempt, "")
		}).WithContext(ctx).WithTimeout(inPlaceRestartTimeout / 2).Should(Succeed())
		stuck := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(agentLost), stuck)).To(Succeed())
		Expect(stuck.Labels[labels.AttemptKey]).To(Equal("1"), "the pod was moved to attempt 1")
		Expect(stuck.Status.ContainerStatuses).To(HaveEach(HaveField("RestartCount", int32(0))), "its containers were never restarted")

		By("recreating the replica as attempt 2 once the barrier held for the timeout, without counting a restart")
		var rec copsev1alpha1.ReplicaRecreation
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
			rec = pcs.Status.ReplicaRecreations[0]
			g.Expect(rec.Attempt).To(Equal(int32(2)))
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)), "the timeout spends no restart")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(rec.Reason).To(Equal(copsev1alpha1.RecreationReasonInPlaceRestartTimeout))
		Expect(rec.InPlace).To(BeFalse(), "the fallback recreates")
		Expect(rec.StartedAt.Time).To(BeTemporally(">=", decided.Add(inPlaceRestartTimeout).Truncate(time.Second)))
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "InPlaceRestartTimedOut")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("running attempt 2 in new pods, the stuck pod gone, to success")
		fresh := runningPods(ctx, ns, "job", "0", "2", 3)
		for _, p := range fresh {
			Expect(p.UID).NotTo(Equal(agentLost.UID))
		}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(agentLost), &corev1.Pod{})).To(Satisfy(apierrors.IsNotFound))
		finishAttempt(ctx, ns, "0", "2", 3)
		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
		expectNoOrphans(ctx, ns, "job")
	})
})

var _ = Describe("Training restart strategy", Label("training"), func() {
	It("refuses to change restartStrategy once created (CEL), naming the field", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-immutable")
		pcs := inPlaceWorkers(ns, 1, 1, 1, "")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		// updateStrategy changes restartStrategy on a fresh copy (the
		// operator writes the status meanwhile) and returns the refusal.
		updateStrategy := func(name string, to copsev1alpha1.TrainingRestartStrategy) error {
			var err error
			Eventually(func(g Gomega) {
				changed := env.GetPodCliqueSet(ctx, g, ns, name)
				changed.Spec.TrainingSpec.RestartStrategy = to
				err = env.Client.Update(ctx, changed)
				g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "a stale copy: try again")
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			return err
		}
		for _, to := range []copsev1alpha1.TrainingRestartStrategy{copsev1alpha1.TrainingRestartRecreate, ""} {
			err := updateStrategy("job", to)
			Expect(err).To(HaveOccurred(), "restartStrategy changed to %q", to)
			Expect(err.Error()).To(And(ContainSubstring("spec.trainingSpec.restartStrategy"), ContainSubstring("immutable")))
		}
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "plain", 1, 1, "", 1))).To(Succeed())
		Expect(updateStrategy("plain", copsev1alpha1.TrainingRestartInPlace)).To(MatchError(ContainSubstring("spec.trainingSpec.restartStrategy is immutable")))
	})
})

var _ = Describe("Training restart in place, across failures", Label("training"), Ordered, func() {
	AfterEach(restartOperatorIfKilled)

	It("makes anew in its domain the pod whose node was deleted, restarts the rest in place, with the operator down at the failure", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-node")
		pool := map[string]string{"e2e.copse.dev/pool": ns}
		nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 6, Block: 0, Rack: 0, Count: 6, Labels: pool})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			for _, name := range nodes {
				_ = client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))
			}
		})
		pcs := inPlaceWorkers(ns, 1, 2, 1, "")
		for i := range pcs.Spec.Template.Cliques {
			pcs.Spec.Template.Cliques[i].Spec.PodSpec.NodeSelector = pool
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 5)
		failing, lost := pods[0], pods[1]
		kept := placementOf(pods[2:])

		By("with the operator down, deleting the node of one pod and making another exit 1")
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: lost.Spec.NodeName}})).To(Succeed())
		env.MakePodExit(ctx, &failing, "1")
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&failing), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		restarted := restartedPods(ctx, ns, "0", "1", 5)
		byName := placementOf(restarted)
		for name, was := range kept {
			Expect(byName).To(HaveKeyWithValue(name, was), "pod %s was not kept where it ran", name)
		}
		Expect(byName).NotTo(HaveKey(lost.Name), "the pod of the deleted node is made anew")
		Expect(byName).NotTo(HaveKey(failing.Name), "the failed pod is made anew")
		for _, p := range restarted {
			Expect(nodes).To(ContainElement(p.Spec.NodeName), "pod %s left the domain", p.Name)
		}
		got := env.GetPodCliqueSet(ctx, Default, ns, "job")
		Expect(got.Status.RestartCount).To(Equal(int32(1)))

		finishAttempt(ctx, ns, "0", "1", 5)
		waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		expectNoOrphans(ctx, ns, "job")
	})

	It("neither loses nor repeats a restart in place when the operator is killed in the middle of it", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-crash")
		Expect(env.Client.Create(ctx, inPlaceWorkers(ns, 1, 2, 2, ""))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 5)
		kept := placementOf(pods[1:])

		By("holding the old leader PodClique, so the restart stays in progress, and killing the operator")
		leaderKey := client.ObjectKey{Namespace: ns, Name: "job-0-leader"}
		setHold(ctx, leaderKey, true)
		env.MakePodExit(ctx, &pods[0], "1")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
			g.Expect(pcs.Status.ReplicaRecreations).To(ConsistOf(And(HaveField("InPlace", BeTrue()), HaveField("CompletedAt", BeNil()))))
			// The kept pods moved to attempt 1 before the old run's objects go.
			g.Expect(env.LivePods(ctx, g, ns, "job", client.MatchingLabels{labels.AttemptKey: "1"})).To(HaveLen(4))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Kill()).To(Succeed())
		setHold(ctx, leaderKey, false)
		time.Sleep(2 * time.Second)
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		restarted := restartedPods(ctx, ns, "0", "1", 5)
		byName := placementOf(restarted)
		for name, was := range kept {
			Expect(byName).To(HaveKeyWithValue(name, was), "pod %s was not kept where it ran", name)
		}
		for i := range restarted {
			if _, ok := kept[restarted[i].Name]; ok {
				restartedInPlace(Default, &restarted[i])
			}
		}
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.RestartCount).To(Equal(int32(1)))
		finishAttempt(ctx, ns, "0", "1", 5)
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(got.Status.RestartCount).To(Equal(int32(1)))
		expectNoOrphans(ctx, ns, "job")
	})

	It("fails with MaxRestartsExceeded once the budget is spent, restarting in place until then", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-budget")
		Expect(env.Client.Create(ctx, inPlaceWorkers(ns, 1, 1, 1, ""))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)
		env.MakePodExit(ctx, &pods[1], "1")
		pods = restartedPods(ctx, ns, "0", "1", 3)
		env.MakePodExit(ctx, &pods[2], "3")
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		Expect(failedCondition(got).Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded))
		Expect(got.Status.RestartCount).To(Equal(int32(1)))
		Expect(got.Status.LastFailure).To(HaveValue(HaveField("ExitCode", HaveValue(Equal(int32(3))))))
		Eventually(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty(), "every pod ends with the workload")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})

// podGroupUID reads the UID of a PodGroup (a replica's gang, made by the
// workload backend), to tell whether a restart kept it.
func podGroupUID(ctx context.Context, namespace, name string) types.UID {
	GinkgoHelper()
	pg := &schedulingv1beta1.PodGroup{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return pg.UID
}

var _ = Describe("Training restart in place whose kept rank's old process crashes after its peer", Label("training"), func() {
	AfterEach(restartOperatorIfKilled)

	It("counts the crash as the previous attempt's: one incident is one restart, the rank is made anew, and the job succeeds with maxRestarts 1", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-peer")
		pcs := inPlaceWorkers(ns, 1, 1, 1, "25s")
		for _, c := range pcs.Spec.Template.Cliques {
			// Time for the new attempt's PodCliques to adopt the kept pods
			// before the kubelet restarts them: the crash then hits an
			// adopted pod, as it would at scale.
			c.Annotations[cluster.AnnotationRestartInPlaceDelay] = "20s"
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)
		var failing, peer *corev1.Pod
		for i := range pods {
			switch {
			case pods[i].Labels[labels.CliqueTemplateKey] == "leader":
				failing = &pods[i]
			case peer == nil:
				peer = &pods[i]
			}
		}
		Expect(failing).NotTo(BeNil())
		Expect(peer).NotTo(BeNil())
		env.MakePodExit(ctx, failing, "1")

		By("crashing the peer's old process once it is moved to attempt 1 and adopted, before the kubelet restarted it")
		moved := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(peer), moved)).To(Succeed())
			g.Expect(moved.Labels[labels.AttemptKey]).To(Equal("1"))
			g.Expect(metav1.GetControllerOf(moved)).NotTo(BeNil(), "adopted by the new attempt's PodClique")
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		patch := client.MergeFrom(moved.DeepCopy())
		moved.Annotations[cluster.AnnotationExitBeforeRestart] = "true"
		moved.Annotations[cluster.AnnotationRunDuration] = "1ms"
		moved.Annotations[cluster.AnnotationExitCode] = "1"
		Expect(env.Client.Patch(ctx, moved, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			now := &corev1.Pod{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(moved), now)
			if apierrors.IsNotFound(err) {
				return // failed, and already replaced
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now.Status.Phase).To(Equal(corev1.PodFailed))
			g.Expect(now.Status.ContainerStatuses).To(HaveEach(HaveField("RestartCount", int32(0))), "its old process crashed, before any restart")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("succeeding after one restart, the peer's index run by a new pod")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(BeElementOf(copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		got := env.GetPodCliqueSet(ctx, Default, ns, "job")
		Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded), "conditions %+v", got.Status.Conditions)
		Expect(got.Status.RestartCount).To(Equal(int32(1)), "one incident, one restart")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(peer), &corev1.Pod{})).To(Satisfy(apierrors.IsNotFound), "the crashed pod was replaced")
	})
})
