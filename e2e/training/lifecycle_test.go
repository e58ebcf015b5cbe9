package training_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

var _ = Describe("Training lifecycle (GREP-0285 test plan)", Label("training"), func() {
	It("succeeds when every pod exits 0, and says so with WorkloadSucceeded", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "succeed")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 3, "3s", 0))).To(Succeed())

		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(pcs.Status.StartTime).NotTo(BeNil())
			g.Expect(failedCondition(pcs)).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "WorkloadSucceeded")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("keeping the finished pods, each exited 0, and recreating none")
		pods := env.Pods(ctx, Default, ns, "job")
		Expect(pods).To(HaveLen(3))
		for _, p := range pods {
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
			Expect(p.Status.ContainerStatuses[0].State.Terminated.ExitCode).To(BeZero())
		}
		// The PodCliqueSet judges completion from the pods as well as from
		// its PodCliques' conditions, so the PodClique controller may write
		// Succeeded a moment after the phase.
		Eventually(func(g Gomega) {
			pclq := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-worker"}, pclq)).To(Succeed())
			g.Expect(pclq.Status.Conditions).To(ContainElement(And(
				HaveField("Type", copsev1alpha1.ConditionTypeSucceeded), HaveField("Status", metav1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "job")).To(HaveLen(3))
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("fails at once with MaxRestartsExceeded when a pod fails and maxRestarts is 0", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "nobudget")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 3, "", 0))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 3)
		victim := pods[1]
		env.MakePodExit(ctx, &victim, "1")

		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			cond := failedCondition(pcs)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded))
			g.Expect(cond.LastTransitionTime.IsZero()).To(BeFalse())
			g.Expect(pcs.Status.RestartCount).To(BeZero())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("leaving no running pod, but keeping the failed one for its logs")
		Expect(activePods(ctx, Default, ns, "job")).To(BeEmpty())
		failed := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&victim), failed)).To(Succeed())
		Expect(failed.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(failed.Status.ContainerStatuses[0].State.Terminated.ExitCode).To(Equal(int32(1)))
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "MaxRestartsExceeded")).To(HaveLen(1))
			g.Expect(env.EventsWithReason(ctx, g, ns, "PodCliqueFailed")).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty(), "a failed workload must not get pods back")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("restarts within the budget and then succeeds, counting each failure once", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "budget")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 2, "8s", 3))).To(Succeed())
		for _, attempt := range []string{"0", "1"} {
			pods := runningPods(ctx, ns, "job", "0", attempt, 2)
			env.MakePodExit(ctx, &pods[0], "1")
		}
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(2)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			restarting := env.EventsWithReason(ctx, g, ns, "ReplicaRestarting")
			g.Expect(restarting).To(HaveLen(2))
			g.Expect(env.EventsWithReason(ctx, g, ns, "WorkloadSucceeded")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		pods := env.LivePods(ctx, Default, ns, "job")
		Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			Expect(p.Labels).To(HaveKeyWithValue(labels.AttemptKey, "2"))
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		}
	})

	It("terminates every pod and fails with MaxRuntimeExceeded when maxRuntime elapses", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "runtime")
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 2, "", 0)
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: 5 * time.Second}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 2)

		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			cond := failedCondition(got)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonMaxRuntimeExceeded))
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
			// Failed only after the limit, measured from startTime.
			g.Expect(cond.LastTransitionTime.Sub(got.Status.StartTime.Time)).To(BeNumerically(">=", 5*time.Second))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "MaxRuntimeExceeded")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("restarts only the replica that failed, with one restart in total", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "tworeplicas")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 2, 2, "10s", 2))).To(Succeed())
		replica0 := runningPods(ctx, ns, "job", "0", "0", 2)
		replica1 := runningPods(ctx, ns, "job", "1", "0", 2)
		clique0 := &copsev1alpha1.PodClique{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-worker"}, clique0)).To(Succeed())

		env.MakePodExit(ctx, &replica1[0], "1")
		runningPods(ctx, ns, "job", "1", "1", 2)

		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
			g.Expect(pcs.Status.ReplicaRecreations[0].ReplicaIndex).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("leaving replica 0 untouched")
		same := &copsev1alpha1.PodClique{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-worker"}, same)).To(Succeed())
		Expect(same.UID).To(Equal(clique0.UID))
		for _, p := range replica0 {
			still := &corev1.Pod{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), still)).To(Succeed(), "replica 0 pod %s was deleted", p.Name)
		}

		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})
