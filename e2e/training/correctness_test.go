package training_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// These specs cover the rules a line-by-line review of GREP-0285 asked for,
// in the shapes users build: scaling groups, pods deleted from outside, an
// operator that was down, pods that run but are never Ready.
var _ = Describe("Training correctness", Label("training"), func() {
	AfterEach(restartOperatorIfKilled)

	It("completes when the last clique to finish belongs to a scaling group, and stays Succeeded past maxRuntime", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "grouped-last")
		leader := framework.CliqueTemplate("leader", 1, framework.PodSpec(0))
		leader.Annotations = runFor("1s", "0")
		worker := framework.CliqueTemplate("worker", 2, framework.PodSpec(0))
		worker.Annotations = runFor("6s", "0")
		pcs := framework.NewPodCliqueSet(ns, "job", 1, leader, worker)
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRuntime: &metav1.Duration{Duration: 20 * time.Second}}
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		pods := env.Pods(ctx, Default, ns, "job")
		Expect(pods).To(HaveLen(5), "1 leader and 2 group replicas x 2 workers")
		for _, p := range pods {
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		}

		By("staying Succeeded once maxRuntime has passed")
		start := env.GetPodCliqueSet(ctx, Default, ns, "job").Status.StartTime.Time
		Consistently(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(failedCondition(got)).To(BeNil())
		}).WithContext(ctx).WithTimeout(max(time.Until(start.Add(25*time.Second)), time.Second)).Should(Succeed())
	})

	It("judges a success by when the pods exited, not by when the operator saw it", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "late-success")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 2, "4s", 0)
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: 10 * time.Second}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		start := waitStartTime(ctx, ns, "job").Time

		By("killing the operator while the job runs; the pods exit 0 before the deadline")
		Expect(env.Operator.Kill()).To(Succeed())
		Eventually(func(g Gomega) {
			for _, p := range env.Pods(ctx, g, ns, "job") {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
				g.Expect(p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time).To(BeTemporally("<", start.Add(10*time.Second)))
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("bringing the operator back only after the deadline")
		time.Sleep(time.Until(start.Add(13 * time.Second)))
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(failedCondition(got)).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("judges a failure before the deadline as a failure, even when seen after it", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "late-failure")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 2, "", 0)
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: 10 * time.Second}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		start := waitStartTime(ctx, ns, "job").Time

		Expect(env.Operator.Kill()).To(Succeed())
		env.MakePodExit(ctx, &pods[0], "3")
		time.Sleep(time.Until(start.Add(13 * time.Second)))
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			g.Expect(failedCondition(got).Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded),
				"the pod failed before the deadline: the budget, not the runtime, ended the job")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	// oneAttemptAtATime restarts a replica whose old pods take a while to
	// terminate, and checks from the recorded history that the two runs
	// never overlapped and that no new gang was made before the old pods
	// were gone.
	oneAttemptAtATime := func(ctx context.Context, prefix string) string {
		GinkgoHelper()
		ns := env.NewNamespace(ctx, prefix)
		history, err := framework.RecordHistory(ctx, env.Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(history.Stop)

		pcs := framework.NewTrainingWorkers(ns, "job", 1, 4, "", 1)
		// A long grace period keeps the old attempt's pods terminating for a
		// while after they are deleted.
		pcs.Spec.Template.Cliques[0].Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](4)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 4)
		env.MakePodExit(ctx, &pods[2], "1")
		runningPods(ctx, ns, "job", "0", "1", 4)

		history.Stop()
		events := history.Events()
		seen := map[string]int{}
		for _, e := range events {
			seen[fmt.Sprintf("%s %s attempt %s", e.Type, e.Kind, e.Attempt)]++
		}
		GinkgoWriter.Printf("recorded: %v\n", seen)
		Expect(framework.AttemptOverlaps(events)).To(BeEmpty())
		Expect(framework.EarlyGangs(events)).To(BeEmpty())
		Expect(seen).To(And(HaveKey("DELETED Pod attempt 0"), HaveKey("ADDED Pod attempt 1")),
			"the history must show the old run's pods going and the new run's coming, or it proves nothing")
		return ns
	}

	It("never runs two attempts of a replica at once, and makes the new gang only once the old pods are gone", func(ctx context.Context) {
		ns := oneAttemptAtATime(ctx, "one-attempt")
		pg := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0"}, pg)).To(Succeed())
		Expect(pg.Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"), "the gang of the new run")
	})

	It("never runs two attempts of a replica at once without gang scheduling either", func(ctx context.Context) {
		// Without PodGroups nothing but copse holds the new run back: with
		// gang scheduling, Kubernetes keeps a PodGroup until its pods are
		// gone, which an operator waiting for the PodGroup would wait for
		// too.
		backend := env.Operator.Configuration().Scheduler.Backend
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.Scheduler.Backend = configv1alpha1.SchedulerBackendNone
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.Scheduler.Backend = backend })).To(Succeed())
		})
		oneAttemptAtATime(ctx, "one-attempt-nogang")
	})

	It("never runs an index again once it exited 0, even when its pod is deleted", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "exit0-final")
		history, err := framework.RecordHistory(ctx, env.Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(history.Stop)
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 3, "", 0))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)

		By("index 0 exits 0 and a user deletes its pod")
		env.MakePodExit(ctx, &pods[0], "0")
		waitPodPhase(ctx, &pods[0], corev1.PodSucceeded)
		Expect(env.Client.Delete(ctx, &pods[0])).To(Succeed())

		By("index 1 exits 0 while the operator is down, and its pod is deleted too")
		Expect(env.Operator.Kill()).To(Succeed())
		env.MakePodExit(ctx, &pods[1], "0")
		waitPodPhase(ctx, &pods[1], corev1.PodSucceeded)
		Expect(env.Client.Delete(ctx, &pods[1])).To(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("recording both indices, recreating neither, and counting no breach")
		Eventually(func(g Gomega) {
			pclq := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-worker"}, pclq)).To(Succeed())
			g.Expect(pclq.Status.SucceededIndexes).To(Equal("0-1"))
			for _, p := range []corev1.Pod{pods[0], pods[1]} {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &corev1.Pod{})
				g.Expect(err).To(HaveOccurred(), "pod %s must be gone once its outcome is recorded", p.Name)
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Consistently(func(g Gomega) {
			live := env.LivePods(ctx, g, ns, "job")
			g.Expect(live).To(HaveLen(1), "only index 2 runs")
			g.Expect(live[0].Labels).To(HaveKeyWithValue(labels.PodIndexKey, "2"))
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.RestartCount).To(BeZero())
			g.Expect(failedCondition(got)).To(BeNil())
		}).WithContext(ctx).WithTimeout(4 * time.Second).Should(Succeed())

		env.MakePodExit(ctx, &pods[2], "0")
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		history.Stop()
		Expect(framework.RerunSuccesses(history.Events())).To(BeEmpty())
	})

	It("runs from when the pods started, ready or not, and bounds them by maxRuntime", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "never-ready")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 2, "", 0)
		pcs.Spec.Template.Cliques[0].Annotations = map[string]string{cluster.AnnotationNeverReady: "true"}
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: 10 * time.Second}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("killing the operator as soon as the pods exist; they start while it is down")
		Eventually(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "job")).To(HaveLen(2))
		}).WithContext(ctx).WithTimeout(longWait).WithPolling(50 * time.Millisecond).Should(Succeed())
		Expect(env.Operator.Kill()).To(Succeed())
		var firstStart time.Time
		Eventually(func(g Gomega) {
			pods := env.Pods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(framework.IsReady(&p)).To(BeFalse())
				started := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
				if firstStart.IsZero() || started.Before(firstStart) {
					firstStart = started
				}
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		time.Sleep(3 * time.Second)
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			g.Expect(got.Status.StartTime).NotTo(BeNil())
			g.Expect(got.Status.StartTime.Time).To(BeTemporally("==", firstStart),
				"startTime is the earliest container start, not when the operator came back")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			g.Expect(failedCondition(got).Reason).To(Equal(copsev1alpha1.ReasonMaxRuntimeExceeded))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(activePods(ctx, Default, ns, "job")).To(BeEmpty())
	})

	It("reports a pod stuck terminating, never force-deletes it, and fails once it is gone", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "stuck")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 2, "", 0))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		stuck := pods[1]
		setAnnotation(ctx, &stuck, cluster.AnnotationUnreachable, "true")
		env.MakePodExit(ctx, &pods[0], "1")

		By("waiting for the report: a condition and an event naming the pod and its node")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(failedCondition(got)).NotTo(BeNil())
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning), "not Failed while a pod still holds its node")
			cond := meta.FindStatusCondition(got.Status.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Message).To(And(ContainSubstring(stuck.Name), ContainSubstring(stuck.Spec.NodeName)))
			g.Expect(env.EventsWithReason(ctx, g, ns, "TerminationOverdue")).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		p := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&stuck), p)).To(Succeed(), "copse must not force-delete the pod")
		Expect(p.DeletionTimestamp).NotTo(BeNil())

		By("the node answering again: the pod ends, the workload is Failed")
		setAnnotation(ctx, p, cluster.AnnotationUnreachable, "false")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, copsev1alpha1.ConditionTypeTerminationOverdue)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("replaces a crashing pod of a clique that tolerates it with back-off, and counts each replacement", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "crashloop")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 3, "", 0)
		pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](2)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		key := client.ObjectKey{Namespace: ns, Name: "job-0-worker"}

		var failedAt time.Time
		for n := 1; n <= 2; n++ {
			victim := podAtIndex(ctx, ns, "0")
			env.MakePodExit(ctx, &victim, "1")
			failedAt = waitPodPhase(ctx, &victim, corev1.PodFailed).Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
			backoff := time.Duration(10<<(n-1)) * time.Second
			By(fmt.Sprintf("replacement %d comes no sooner than %s after the failure", n, backoff))
			var replacement corev1.Pod
			Eventually(func(g Gomega) {
				replacement = podAtIndexG(ctx, g, ns, "0")
				g.Expect(replacement.UID).NotTo(Equal(victim.UID))
			}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
			// Timestamps have whole seconds: allow one.
			Expect(replacement.CreationTimestamp.Time).To(BeTemporally(">=", failedAt.Add(backoff-time.Second)))
			pclq := &copsev1alpha1.PodClique{}
			Expect(env.Client.Get(ctx, key, pclq)).To(Succeed())
			Expect(pclq.Status.PodReplacements).To(Equal(int32(n)))
			runningPods(ctx, ns, "job", "0", "0", 3)
		}
		got := env.GetPodCliqueSet(ctx, Default, ns, "job")
		Expect(got.Status.RestartCount).To(BeZero(), "a tolerated failure is not a replica restart")
		Expect(failedCondition(got)).To(BeNil())
	})

	It("says why in one look: the first failed pod, its container, exit code, reason and node", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "root-cause")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 2, "", 0))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.MakePodExit(ctx, &pods[1], "137")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			f := got.Status.LastFailure
			g.Expect(f).NotTo(BeNil())
			g.Expect(f.Pod).To(Equal(pods[1].Name))
			g.Expect(f.Container).To(Equal("main"))
			g.Expect(f.ExitCode).To(Equal(ptr.To[int32](137)))
			g.Expect(f.Node).To(Equal(pods[1].Spec.NodeName))
			g.Expect(f.Summary).To(ContainSubstring("exited 137"))
			g.Expect(failedCondition(got).Message).To(ContainSubstring("first failure: " + pods[1].Name))
			events := env.EventsWithReason(ctx, g, ns, "MaxRestartsExceeded")
			g.Expect(events).NotTo(BeEmpty())
			g.Expect(events[0].Note).To(ContainSubstring(pods[1].Name))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("showing the reason and the failure in kubectl get pcs")
		out, err := env.Kubectl(ctx, "get", "pcs", "job", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(And(ContainSubstring("MaxRestartsExceeded"), ContainSubstring(pods[1].Name+": container main exited 137")))
	})
})

func runFor(duration, exitCode string) map[string]string {
	return map[string]string{cluster.AnnotationRunDuration: duration, cluster.AnnotationExitCode: exitCode}
}

func setAnnotation(ctx context.Context, pod *corev1.Pod, key, value string) {
	GinkgoHelper()
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
	Expect(env.Client.Patch(ctx, pod, patch)).To(Succeed())
}

// waitPodPhase waits until the pod reaches phase and returns it.
func waitPodPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	GinkgoHelper()
	got := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(phase))
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	return got
}

// podAtIndex waits for the live pod at index of replica 0.
func podAtIndex(ctx context.Context, namespace, index string) corev1.Pod {
	GinkgoHelper()
	var pod corev1.Pod
	Eventually(func(g Gomega) { pod = podAtIndexG(ctx, g, namespace, index) }).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	return pod
}

func podAtIndexG(ctx context.Context, g Gomega, namespace, index string) corev1.Pod {
	var found []corev1.Pod
	for _, p := range env.LivePods(ctx, g, namespace, "job", client.MatchingLabels{labels.PodIndexKey: index}) {
		if !framework.IsTerminal(&p) {
			found = append(found, p)
		}
	}
	g.Expect(found).To(HaveLen(1))
	return found[0]
}
