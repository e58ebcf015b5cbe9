package kueue_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
)

// podsReadyTimeout is the suite's Kueue waitForPodsReady timeout
// (suite_test.go). Kueue v0.19 turns waitForPodsReady on by default with a
// 30-minute timeout and a requeuing backoff from 60 s; the suite keeps it
// on with shorter times, so that a gang that never becomes ready is evicted
// within a spec, while one that becomes ready in seconds is not.
const podsReadyTimeout = 30 * time.Second

// kueueWaitForPodsReady is the suite's waitForPodsReady: Kueue's defaults
// but the timeout and the backoff (its base 2 s, so that an evicted
// workload is admitted again within a spec).
var kueueWaitForPodsReady = &kueueconfig.WaitForPodsReady{
	Timeout:           metav1.Duration{Duration: podsReadyTimeout},
	RequeuingStrategy: &kueueconfig.RequeuingStrategy{BackoffBaseSeconds: ptr.To[int32](2), BackoffMaxSeconds: ptr.To[int32](10)},
}

var _ = Describe("Kueue's waitForPodsReady and copse's PodsReady", Label("kueue"), func() {
	It("keeps a gang that becomes ready and one that restarts in the middle admitted past the timeout, "+
		"and has one that never becomes ready evicted, suspended without a restart spent, and admitted again", func(ctx context.Context) {
		ns, queues := newQueues(ctx, "kueue-podsready", "6", false)
		// Each runs well past the timeout once ready.
		runFor := (podsReadyTimeout + 15*time.Second).String()
		steady := queuedPCS(ns, "steady", queues.ClusterQueue, 2, "1")
		steady.Spec.Template.Cliques[0].Annotations = map[string]string{cluster.AnnotationRunDuration: runFor, cluster.AnnotationExitCode: "0"}
		// restarted's first run fails after 10 s; its second runs to success.
		restarted := queuedPCS(ns, "restarted", queues.ClusterQueue, 2, "1")
		restarted.Spec.TrainingSpec.MaxRestarts = ptr.To[int32](1)
		restarted.Spec.Template.Cliques[0].Annotations = map[string]string{cluster.AnnotationRunDuration: "10s",
			cluster.AnnotationExitCodesByAttempt: "1,0"}
		neverReady := queuedPCS(ns, "never-ready", queues.ClusterQueue, 2, "1")
		neverReady.Spec.Template.Cliques[0].Annotations = map[string]string{cluster.AnnotationNeverReady: "true"}
		for _, pcs := range []*copsev1alpha1.PodCliqueSet{steady, restarted, neverReady} {
			Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		}

		By("the ready gangs: PodsReady True on their Workloads")
		for _, name := range []string{"steady", "restarted"} {
			expectPodsReady(ctx, ns, name, metav1.ConditionTrue, kueue.WorkloadStarted)
		}

		By("restarted's first run fails: PodsReady False while it restarts, then True again (Recovered), within the recovery timeout")
		expectPodsReady(ctx, ns, "restarted", metav1.ConditionTrue, kueue.WorkloadRecovered)
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "restarted").Status.RestartCount).To(Equal(int32(1)))

		By("never-ready is evicted by Kueue for the timeout; copse suspends it, spends no restart and records no failure")
		Eventually(func(g Gomega) {
			evicted := apimeta.FindStatusCondition(workloadOf(ctx, g, ns, "never-ready").Status.Conditions, kueue.WorkloadEvicted)
			g.Expect(evicted).NotTo(BeNil())
			g.Expect(evicted.Reason).To(Equal(kueue.WorkloadEvictedByPodsReadyTimeout), evicted.Message)
		}).WithContext(ctx).WithTimeout(podsReadyTimeout + pcsWait).Should(Succeed())
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "never-ready")
			g.Expect(pcs.Status.ReplicaRecreations).To(ContainElement(HaveField("Reason", copsev1alpha1.RecreationReasonSuspension)))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		Eventually(func() []string { return events(ctx, ns, "never-ready", copsekueue.EventEvicted) }).
			WithContext(ctx).WithTimeout(pcsWait).ShouldNot(BeEmpty())

		By("never-ready is requeued and admitted again: its pods come back, still without a restart spent")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, ns, "never-ready")
			g.Expect(wl.Status.RequeueState).NotTo(BeNil())
			g.Expect(ptr.Deref(wl.Status.RequeueState.Count, 0)).To(BeNumerically(">=", 1))
			g.Expect(apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue())
			g.Expect(env.LivePods(ctx, g, ns, "never-ready")).To(HaveLen(2))
		}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
		pcs := env.GetPodCliqueSet(ctx, Default, ns, "never-ready")
		Expect(pcs.Status.RestartCount).To(BeZero())
		Expect(pcs.Status.Phase).NotTo(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
		Expect(pcs.Status.LastFailure).To(BeNil())

		By("the ready ones run to success, never evicted")
		Eventually(func(g Gomega) {
			for _, name := range []string{"steady", "restarted"} {
				g.Expect(env.GetPodCliqueSet(ctx, g, ns, name).Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded), name)
			}
		}).WithContext(ctx).WithTimeout(podsReadyTimeout + pcsWait).Should(Succeed())
		for _, name := range []string{"steady", "restarted"} {
			wl := workloadOf(ctx, Default, ns, name)
			Expect(apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)).To(BeNil(), "Workload of %s was evicted", name)
			Expect(wl.Status.RequeueState).To(BeNil(), "Workload of %s was requeued", name)
			recs := env.GetPodCliqueSet(ctx, Default, ns, name).Status.ReplicaRecreations
			Expect(recs).NotTo(ContainElement(HaveField("Reason", copsev1alpha1.RecreationReasonSuspension)), "%s was suspended", name)
		}
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
	})
})

// expectPodsReady waits until the PodsReady condition of the
// PodCliqueSet's Workload has status and reason.
func expectPodsReady(ctx context.Context, namespace, pcsName string, status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(workloadOf(ctx, g, namespace, pcsName).Status.Conditions, kueue.WorkloadPodsReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(status), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
	}).WithContext(ctx).WithTimeout(pcsWait).Should(Succeed())
}
