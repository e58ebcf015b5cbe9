package training_test

import (
	"context"
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

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
)

// gatedClique is a clique of n pods that run until deleted; unready pods
// never pass their (simulated) readiness probe until the spec makes them
// Ready with makeReady.
func gatedClique(name string, n int32, unready bool, training bool) *grovecorev1alpha1.PodCliqueTemplateSpec {
	spec := framework.PodSpec(0)
	if training {
		spec.RestartPolicy = corev1.RestartPolicyNever
	}
	c := framework.CliqueTemplate(name, n, spec)
	if unready {
		c.Annotations = map[string]string{cluster.AnnotationNeverReady: "true"}
	}
	return c
}

// cliquePods lists the live pods of one clique of replica 0.
func cliquePods(ctx context.Context, g Gomega, namespace, pcsName, clique string) []corev1.Pod {
	return env.LivePods(ctx, g, namespace, pcsName, client.MatchingLabels{labels.CliqueTemplateKey: clique})
}

// expectGateClosed checks that the clique's n pods exist and are scheduled,
// but wait behind a closed startup gate: Pending, the gate init container
// running, the main container not started.
func expectGateClosed(g Gomega, pods []corev1.Pod, n int) {
	g.Expect(pods).To(HaveLen(n))
	for _, p := range pods {
		g.Expect(p.Annotations).To(HaveKeyWithValue(labels.StartupGateAnnotation, labels.StartupGateClosed), "pod %s", p.Name)
		g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", p.Name)
		g.Expect(p.Status.Phase).To(Equal(corev1.PodPending), "pod %s", p.Name)
		g.Expect(p.Spec.InitContainers).NotTo(BeEmpty())
		g.Expect(p.Spec.InitContainers[0].Name).To(Equal(blueprint.StartupGateContainer))
		g.Expect(p.Status.InitContainerStatuses).NotTo(BeEmpty(), "pod %s", p.Name)
		g.Expect(p.Status.InitContainerStatuses[0].State.Running).NotTo(BeNil(), "pod %s: the gate runs", p.Name)
		for _, c := range p.Status.ContainerStatuses {
			g.Expect(c.State.Running).To(BeNil(), "pod %s: container %s started behind a closed gate", p.Name, c.Name)
		}
	}
}

// expectStaysClosed checks that the clique's gates stay closed for d.
func expectStaysClosed(ctx context.Context, namespace, pcsName, clique string, n int, d time.Duration) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		expectGateClosed(g, cliquePods(ctx, g, namespace, pcsName, clique), n)
	}).WithContext(ctx).WithTimeout(d).Should(Succeed())
}

// expectGateOpenAndRunning checks that the clique's n pods passed their
// open gate and run.
func expectGateOpenAndRunning(g Gomega, pods []corev1.Pod, n int) {
	g.Expect(pods).To(HaveLen(n))
	for _, p := range pods {
		g.Expect(p.Annotations).To(HaveKeyWithValue(labels.StartupGateAnnotation, labels.StartupGateOpen), "pod %s", p.Name)
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
	}
}

// setReady plays a readiness probe that starts (or stops) passing.
func setReady(ctx context.Context, pods []corev1.Pod, ready bool) {
	GinkgoHelper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range pods {
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&pods[i]), pod)).To(Succeed())
			patch := client.MergeFrom(pod.DeepCopy())
			for j := range pod.Status.Conditions {
				if t := pod.Status.Conditions[j].Type; t == corev1.PodReady || t == corev1.ContainersReady {
					pod.Status.Conditions[j].Status = status
				}
			}
			for j := range pod.Status.ContainerStatuses {
				pod.Status.ContainerStatuses[j].Ready = ready
			}
			g.Expect(env.Client.Status().Patch(ctx, pod, patch)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}
}

// startupBlocked reads the StartupBlocked condition of PodClique name.
func startupBlocked(ctx context.Context, g Gomega, namespace, name string) *metav1.Condition {
	pclq := &copsev1alpha1.PodClique{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pclq)).To(Succeed())
	return meta.FindStatusCondition(pclq.Status.Conditions, copsev1alpha1.ConditionTypeStartupBlocked)
}

func expectBlocked(ctx context.Context, g Gomega, namespace, name, reason, names string) {
	cond := startupBlocked(ctx, g, namespace, name)
	g.Expect(cond).NotTo(BeNil(), "PodClique %s has no StartupBlocked condition", name)
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "PodClique %s", name)
	g.Expect(cond.Reason).To(Equal(reason), "PodClique %s", name)
	g.Expect(cond.Message).To(ContainSubstring(names), "PodClique %s", name)
}

func expectUnblocked(ctx context.Context, g Gomega, namespace, name string) {
	cond := startupBlocked(ctx, g, namespace, name)
	g.Expect(cond).NotTo(BeNil(), "PodClique %s has no StartupBlocked condition", name)
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "PodClique %s", name)
	g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonPredecessorsDone), "PodClique %s", name)
}

// killOperatorWhile kills the operator, runs change while it is down, and
// restarts it.
func killOperatorWhile(ctx context.Context, change func()) {
	GinkgoHelper()
	Expect(env.Operator.Kill()).To(Succeed())
	change()
	Expect(env.Operator.Restart(ctx)).To(Succeed())
}

var _ = Describe("Start order", Label("training"), Ordered, func() {
	AfterEach(restartOperatorIfKilled)

	It("starts InOrder cliques one after the other, their pods created and scheduled at once, across an operator kill", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "in-order")
		pcs := framework.NewPodCliqueSet(ns, "job", 1,
			gatedClique("a", 1, true, true), gatedClique("b", 2, true, true), gatedClique("c", 1, false, true))
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("all pods are created and gang-scheduled; only a's containers run")
		var a []corev1.Pod
		Eventually(func(g Gomega) {
			a = cliquePods(ctx, g, ns, "job", "a")
			g.Expect(a).To(HaveLen(1))
			g.Expect(a[0].Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(a[0].Annotations).NotTo(HaveKey(labels.StartupGateAnnotation), "the first clique has no gate")
			expectGateClosed(g, cliquePods(ctx, g, ns, "job", "b"), 2)
			expectGateClosed(g, cliquePods(ctx, g, ns, "job", "c"), 1)
			expectBlocked(ctx, g, ns, "job-0-b", copsev1alpha1.ReasonWaitingForReady, "a")
			expectBlocked(ctx, g, ns, "job-0-c", copsev1alpha1.ReasonWaitingForReady, "b")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectStaysClosed(ctx, ns, "job", "b", 2, 3*time.Second)

		By("a becomes Ready while the operator is down: b's gate stays closed until it is back")
		killOperatorWhile(ctx, func() {
			setReady(ctx, a, true)
			expectStaysClosed(ctx, ns, "job", "b", 2, 2*time.Second)
		})

		By("the restarted operator opens b's gates; c still waits for b")
		var b []corev1.Pod
		Eventually(func(g Gomega) {
			b = cliquePods(ctx, g, ns, "job", "b")
			expectGateOpenAndRunning(g, b, 2)
			expectGateClosed(g, cliquePods(ctx, g, ns, "job", "c"), 1)
			expectUnblocked(ctx, g, ns, "job-0-b")
			expectBlocked(ctx, g, ns, "job-0-c", copsev1alpha1.ReasonWaitingForReady, "b")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("b Ready: c starts")
		setReady(ctx, b, true)
		Eventually(func(g Gomega) {
			c := cliquePods(ctx, g, ns, "job", "c")
			expectGateOpenAndRunning(g, c, 1)
			g.Expect(framework.IsReady(&c[0])).To(BeTrue())
			expectUnblocked(ctx, g, ns, "job-0-c")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.RestartCount).To(BeZero())
		expectNoOrphans(ctx, ns, "job")
	})

	It("starts an Explicit fan-in clique after both cliques it names, across an operator kill", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "fan-in")
		c := gatedClique("c", 1, false, true)
		c.Spec.StartsAfter = []string{"a", "b"}
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 0, gatedClique("a", 1, true, true), gatedClique("b", 1, true, true), c)
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var a, b []corev1.Pod
		Eventually(func(g Gomega) {
			a, b = cliquePods(ctx, g, ns, "job", "a"), cliquePods(ctx, g, ns, "job", "b")
			g.Expect(a).To(HaveLen(1))
			g.Expect(b).To(HaveLen(1))
			g.Expect(a[0].Status.Phase).To(Equal(corev1.PodRunning), "a and b start in any order")
			g.Expect(b[0].Status.Phase).To(Equal(corev1.PodRunning), "a and b start in any order")
			expectGateClosed(g, cliquePods(ctx, g, ns, "job", "c"), 1)
			expectBlocked(ctx, g, ns, "job-0-c", copsev1alpha1.ReasonWaitingForReady, "a, b")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("a Ready, b not: c waits for b")
		setReady(ctx, a, true)
		Eventually(func(g Gomega) {
			expectBlocked(ctx, g, ns, "job-0-c", copsev1alpha1.ReasonWaitingForReady, "b")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectStaysClosed(ctx, ns, "job", "c", 1, 3*time.Second)

		By("b becomes Ready while the operator is down")
		killOperatorWhile(ctx, func() {
			setReady(ctx, b, true)
			expectStaysClosed(ctx, ns, "job", "c", 1, 2*time.Second)
		})
		Eventually(func(g Gomega) {
			expectGateOpenAndRunning(g, cliquePods(ctx, g, ns, "job", "c"), 1)
			expectUnblocked(ctx, g, ns, "job-0-c")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("creates no trainer pod until both initializers succeeded, schedules them apart, and succeeds, across an operator kill", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "after-success")
		initializer := func(name, runFor string) *grovecorev1alpha1.PodCliqueTemplateSpec {
			c := gatedClique(name, 1, false, true)
			c.Annotations = map[string]string{cluster.AnnotationRunDuration: runFor, cluster.AnnotationExitCode: "0"}
			return c
		}
		trainer := gatedClique("trainer", 2, false, true)
		trainer.Annotations = map[string]string{cluster.AnnotationRunDuration: "2s", cluster.AnnotationExitCode: "0"}
		// Each step below looks while an initializer still runs: twenty seconds
		// apart, so that a slow pod start on a busy machine cannot close the
		// window a step checks in (with 8s and 12s make test once missed it).
		pcs := framework.NewPodCliqueSet(ns, "tj", 1, initializer("dataset", "20s"), initializer("model", "40s"), trainer)
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{
			MaxRestarts:          ptr.To[int32](0),
			StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{{Clique: "trainer", Cliques: []string{"dataset", "model"}}},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("the initializers run in a basic PodGroup of their own; the trainer's gang holds only the trainer")
		Eventually(func(g Gomega) {
			g.Expect(cliquePods(ctx, g, ns, "tj", "trainer")).To(BeEmpty(), "a trainer pod exists before the initializers succeeded")
			for _, name := range []string{"dataset", "model"} {
				pods := cliquePods(ctx, g, ns, "tj", name)
				g.Expect(pods).To(HaveLen(1))
				g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(pods[0].Spec.SchedulingGroup).NotTo(BeNil())
				g.Expect(ptr.Deref(pods[0].Spec.SchedulingGroup.PodGroupName, "")).To(Equal("tj-0-prelude"))
			}
			expectBlocked(ctx, g, ns, "tj-0-trainer", copsev1alpha1.ReasonWaitingForSucceeded, "dataset, model")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		prelude := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tj-0-prelude"}, prelude)).To(Succeed())
		Expect(prelude.Spec.SchedulingPolicy.Basic).NotTo(BeNil(), "the prelude is not a gang")
		Expect(prelude.Spec.SchedulingPolicy.Gang).To(BeNil())
		base := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tj-0"}, base)).To(Succeed())
		Expect(base.Spec.SchedulingPolicy.Gang).NotTo(BeNil())
		Expect(base.Spec.SchedulingPolicy.Gang.MinCount).To(Equal(int32(2)), "the trainer's gang counts only the trainer's pods")

		By("dataset succeeds first: the trainer still waits for model")
		Eventually(func(g Gomega) {
			g.Expect(cliquePods(ctx, g, ns, "tj", "trainer")).To(BeEmpty(), "a trainer pod exists before model succeeded")
			expectBlocked(ctx, g, ns, "tj-0-trainer", copsev1alpha1.ReasonWaitingForSucceeded, "model")
			g.Expect(startupBlocked(ctx, g, ns, "tj-0-trainer").Message).NotTo(ContainSubstring("dataset"))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("killing the operator while it waits for model, which succeeds while the operator is down")
		var lastInitializerEnd time.Time
		killOperatorWhile(ctx, func() {
			Eventually(func(g Gomega) {
				for _, name := range []string{"dataset", "model"} {
					pods := env.Pods(ctx, g, ns, "tj", client.MatchingLabels{labels.CliqueTemplateKey: name})
					g.Expect(pods).To(HaveLen(1))
					g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodSucceeded))
					end := pods[0].Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
					if end.After(lastInitializerEnd) {
						lastInitializerEnd = end
					}
				}
			}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
			Expect(env.Pods(ctx, Default, ns, "tj", client.MatchingLabels{labels.CliqueTemplateKey: "trainer"})).To(BeEmpty())
		})

		By("after the restart: the initializers' success is recorded, the trainer runs in its own gang, and the workload succeeds")
		Eventually(func(g Gomega) {
			pods := env.Pods(ctx, g, ns, "tj", client.MatchingLabels{labels.CliqueTemplateKey: "trainer"})
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Spec.SchedulingGroup).NotTo(BeNil())
				g.Expect(ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "")).To(Equal("tj-0"))
			}
			expectUnblocked(ctx, g, ns, "tj-0-trainer")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "tj")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(got.Status.RestartCount).To(BeZero())
			g.Expect(failedCondition(got)).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		trainerPods := env.Pods(ctx, Default, ns, "tj", client.MatchingLabels{labels.CliqueTemplateKey: "trainer"})
		Expect(trainerPods).To(HaveLen(2), "each trainer pod is created once")
		for _, p := range trainerPods {
			Expect(p.CreationTimestamp.Time).NotTo(BeTemporally("<", lastInitializerEnd), "trainer pod %s was created before the last initializer ended", p.Name)
		}
		expectNoOrphans(ctx, ns, "tj")
	})

	It("runs a clique that starts after a predecessor that exited 0: an edge in both startsAfter and startsAfterSucceeded means the success edge", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "ready-and-succeeded")
		initClique := gatedClique("init", 1, false, true)
		initClique.Annotations = map[string]string{cluster.AnnotationRunDuration: "2s", cluster.AnnotationExitCode: "0"}
		trainer := gatedClique("trainer", 2, false, true)
		trainer.Annotations = map[string]string{cluster.AnnotationRunDuration: "2s", cluster.AnnotationExitCode: "0"}
		trainer.Spec.StartsAfter = []string{"init"}
		pcs := framework.NewPodCliqueSet(ns, "job", 1, initClique, trainer)
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{
			MaxRestarts:          ptr.To[int32](0),
			StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{{Clique: "trainer", Cliques: []string{"init"}}},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed(), "the webhook accepts an edge in both fields")

		By("the trainer's pods are created once init exited 0, with no startup gate, and the workload succeeds")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			trainerPods := env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.CliqueTemplateKey: "trainer"})
			for _, p := range trainerPods {
				g.Expect(p.Annotations).NotTo(HaveKey(labels.StartupGateAnnotation), "pod %s waits behind a gate for a clique that has ended", p.Name)
			}
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded), "pods of the trainer: %d", len(trainerPods))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectUnblocked(ctx, Default, ns, "job-0-trainer")
	})

	It("opens the gate after an InOrder predecessor that exited 0 without ever being Ready, and for a replacement created after it ended", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "predecessor-ended")
		initClique := gatedClique("init", 1, true, true) // never Ready: it exits before a readiness probe would pass
		initClique.Annotations[cluster.AnnotationRunDuration] = "4s"
		initClique.Annotations[cluster.AnnotationExitCode] = "0"
		trainer := gatedClique("trainer", 2, false, true)
		trainer.Spec.MinAvailable = ptr.To[int32](1) // tolerates the loss of one pod: a failed one is replaced
		pcs := framework.NewPodCliqueSet(ns, "job", 1, initClique, trainer)
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("while init runs, never Ready, the trainer waits behind its gate")
		Eventually(func(g Gomega) {
			expectGateClosed(g, cliquePods(ctx, g, ns, "job", "trainer"), 2)
			expectBlocked(ctx, g, ns, "job-0-trainer", copsev1alpha1.ReasonWaitingForReady, "init")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("init exits 0: the trainer's gates open and it runs; the condition no longer names init")
		var trainerPods []corev1.Pod
		Eventually(func(g Gomega) {
			trainerPods = cliquePods(ctx, g, ns, "job", "trainer")
			expectGateOpenAndRunning(g, trainerPods, 2)
			expectUnblocked(ctx, g, ns, "job-0-trainer")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("a trainer pod fails: its replacement, created after init ended, starts with an open gate")
		env.MakePodExit(ctx, &trainerPods[0], "1")
		Eventually(func(g Gomega) {
			var replacement *corev1.Pod
			for _, p := range cliquePods(ctx, g, ns, "job", "trainer") {
				if p.UID != trainerPods[0].UID && p.UID != trainerPods[1].UID {
					replacement = &p
				}
			}
			g.Expect(replacement).NotTo(BeNil(), "no replacement yet")
			g.Expect(replacement.Annotations).To(HaveKeyWithValue(labels.StartupGateAnnotation, labels.StartupGateOpen))
			g.Expect(replacement.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.RestartCount).To(BeZero())
	})

	It("orders an Inference PodCliqueSet's cliques too", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inference-order")
		pcs := framework.NewPodCliqueSet(ns, "serve", 1, gatedClique("router", 1, true, false), gatedClique("server", 2, false, false))
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var router []corev1.Pod
		Eventually(func(g Gomega) {
			router = cliquePods(ctx, g, ns, "serve", "router")
			g.Expect(router).To(HaveLen(1))
			g.Expect(router[0].Status.Phase).To(Equal(corev1.PodRunning))
			expectGateClosed(g, cliquePods(ctx, g, ns, "serve", "server"), 2)
			expectBlocked(ctx, g, ns, "serve-0-server", copsev1alpha1.ReasonWaitingForReady, "router")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectStaysClosed(ctx, ns, "serve", "server", 2, 3*time.Second)

		setReady(ctx, router, true)
		Eventually(func(g Gomega) {
			server := cliquePods(ctx, g, ns, "serve", "server")
			expectGateOpenAndRunning(g, server, 2)
			for _, p := range server {
				g.Expect(framework.IsReady(&p)).To(BeTrue())
			}
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "serve").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("the router losing readiness does not close the servers' gates again")
		setReady(ctx, router, false)
		Consistently(func(g Gomega) {
			expectGateOpenAndRunning(g, cliquePods(ctx, g, ns, "serve", "server"), 2)
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})
})
