package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Bounded work: every pass of every controller creates and deletes a
// bounded number of objects and looks at its owners again before the next
// one, so a workload deleted in the middle of a large gang stops getting
// pods at once, and a refused pod costs a bounded number of requests.
var _ = Describe("Bounded work", Label("reliability"), func() {
	It("stops creating the pods of a 5,000-pod gang within 2 seconds of its deletion", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "huge-gang")
		cutsBefore := writeBudgetCuts(ctx, "PodClique")
		pcs := framework.NewTrainingWorkers(ns, "huge", 1, 5000, "", 0)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("letting pod creation run for 2 seconds")
		Eventually(func(g Gomega) {
			g.Expect(podCount(ctx, g, ns)).To(BeNumerically(">", 0))
		}).WithContext(ctx).WithTimeout(longWait).WithPolling(100 * time.Millisecond).Should(Succeed())
		time.Sleep(2 * time.Second)
		before := podCount(ctx, Default, ns)

		By("deleting the PodCliqueSet")
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		deleted := time.Now()
		time.Sleep(2 * time.Second)
		settled := podCount(ctx, Default, ns)
		GinkgoWriter.Printf("pods: %d when deleted, %d two seconds later\n", before, settled)
		Expect(settled).To(BeNumerically("<", 5000), "the whole gang was created before the deletion: the test proves nothing")
		// 5,000 pods do not fit in one pass of the default budget (1,000
		// writes): the PodClique's passes were cut, and counted.
		Expect(writeBudgetCuts(ctx, "PodClique")).To(BeNumerically(">", cutsBefore),
			"copse_write_budget_exhausted_total{controller=\"PodClique\"} did not count the passes the budget cut")

		By("sampling: no pod is created more than 2 seconds after the deletion")
		Consistently(func(g Gomega) {
			g.Expect(podCount(ctx, g, ns)).To(BeNumerically("<=", settled))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		var pods metav1.PartialObjectMetadataList
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		Expect(env.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			// Creation timestamps have whole seconds.
			Expect(p.CreationTimestamp.Time).To(BeTemporally("<=", deleted.Add(3*time.Second)), "pod %s created after the deletion", p.Name)
		}

		By("and nothing is left behind")
		Eventually(func(g Gomega) {
			g.Expect(podCount(ctx, g, ns)).To(BeZero())
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("reports a quota's refusal, backs off, and creates the rest once the quota is raised", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "quota")
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
		}
		Expect(env.Client.Create(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.ResourceQuota{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(quota), got)).To(Succeed())
			g.Expect(got.Status.Hard).NotTo(BeEmpty(), "the quota controller has not picked the quota up yet")
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		refusedBefore := refusedCreates(ctx)

		pcs := servingPCS(ns, "serve", 19) // 1 leader + 19 workers = 20 pods
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("reporting the refusal in a condition and an event that quote the quota")
		Eventually(func(g Gomega) {
			g.Expect(podCount(ctx, g, ns)).To(Equal(10))
			refused := false
			var cliques copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &cliques, client.InNamespace(ns))).To(Succeed())
			for _, c := range cliques.Items {
				if cond := meta.FindStatusCondition(c.Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused); cond != nil && cond.Status == metav1.ConditionTrue {
					g.Expect(cond.Message).To(ContainSubstring("exceeded quota: pods"))
					refused = true
				}
			}
			g.Expect(refused).To(BeTrue(), "no PodClique reports the refusal")
			events := env.EventsWithReason(ctx, g, ns, "PodCreationRefused")
			g.Expect(events).NotTo(BeEmpty())
			g.Expect(events[0].Note).To(ContainSubstring("exceeded quota: pods"))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("trying again only with back-off: a bounded number of refused creates per minute")
		start := refusedCreates(ctx)
		time.Sleep(time.Minute)
		perMinute := refusedCreates(ctx) - start
		GinkgoWriter.Printf("refused pod creations: %.0f before the measured minute (the first burst), %.0f during it\n", start-refusedBefore, perMinute)
		Expect(perMinute).To(BeNumerically("<=", 12), "the operator keeps hammering the API server")
		Expect(podCount(ctx, Default, ns)).To(Equal(10))

		By("raising the quota: the rest is created at once, and the condition clears")
		raised := time.Now()
		patch := client.MergeFrom(quota.DeepCopy())
		quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("20")
		Expect(env.Client.Patch(ctx, quota, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(podCount(ctx, g, ns)).To(Equal(20))
			var cliques copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &cliques, client.InNamespace(ns))).To(Succeed())
			for _, c := range cliques.Items {
				g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)).To(BeFalse())
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		GinkgoWriter.Printf("all 20 pods %s after the quota was raised\n", time.Since(raised).Round(100*time.Millisecond))
	})
})

// podCount counts the namespace's pods that copse manages, terminating ones
// included, reading metadata only.
func podCount(ctx context.Context, g Gomega, namespace string) int {
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace),
		client.MatchingLabels{labels.ManagedByKey: labels.ManagedByValue})).To(Succeed())
	return len(pods.Items)
}

// refusedCreates is how many POST requests of the operator the API server
// answered 403 Forbidden (a quota's refusal), from the operator's metrics.
func refusedCreates(ctx context.Context) float64 {
	GinkgoHelper()
	metrics, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
	Expect(err).NotTo(HaveOccurred())
	return metrics.Sum("rest_client_requests_total",
		map[string]string{"method": http.MethodPost, "code": fmt.Sprint(http.StatusForbidden)})
}

// writeBudgetCuts is copse_write_budget_exhausted_total of a controller,
// scraped from the operator: it lives as long as the operator process, so
// a spec compares two scrapes.
func writeBudgetCuts(ctx context.Context, controller string) float64 {
	GinkgoHelper()
	m, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
	Expect(err).NotTo(HaveOccurred())
	return m.Sum("copse_write_budget_exhausted_total", map[string]string{"controller": controller})
}
