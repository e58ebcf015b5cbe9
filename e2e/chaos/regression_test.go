package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Regression spec for a bug found by the chaos harness (seed
// 1795371534442876055, workloads w00, w07, w15, w36, w38, w43 stuck Running,
// in a first form of the tolerated-failure scenario whose other pods exited
// 0 on their own, before the replacement came). The replacement joined the
// replica's gang, whose minCount is the sum of the cliques' minAvailable;
// pods that exited 0 no longer count, so kube-scheduler never bound it. Now
// a pod created after its clique was once available does not join the gang
// (blueprint.PodContext.GangPlaced).
var _ = Describe("Chaos regression: a tolerated failure replaced after the rest of the gang exited 0", Label("chaos"), func() {
	It("schedules the replacement and succeeds", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "repro-late-replacement")
		// One replica, one clique of 3 pods that tolerates one loss: the
		// replica's gang has minCount 2. The pods run until told to exit.
		worker := framework.CliqueTemplate("worker", 3, framework.PodSpec(0))
		worker.Spec.MinAvailable = ptr.To[int32](2)
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 0, worker)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = env.LivePods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(3))
			for i := range pods {
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue())
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

		By("failing one pod (tolerated: 2 stay healthy), then the two others exit 0 before its 10s back-off ends")
		env.MakePodExit(ctx, &pods[0], "1")
		env.MakePodExit(ctx, &pods[1], "0")
		env.MakePodExit(ctx, &pods[2], "0")
		victimIndex := pods[0].Labels[labels.PodIndexKey]

		By("the replacement is created after the back-off")
		var replacement corev1.Pod
		Eventually(func(g Gomega) {
			found := env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.PodIndexKey: victimIndex})
			g.Expect(found).To(HaveLen(1))
			g.Expect(found[0].UID).NotTo(Equal(pods[0].UID))
			replacement = found[0]
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

		By("the replacement must be scheduled and run, although its gang's other pods have ended")
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&replacement), got)).To(Succeed())
			gang := "none"
			if sg := got.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
				pg := &schedulingv1beta1.PodGroup{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: *sg.PodGroupName}, pg); err == nil {
					gang = fmt.Sprintf("PodGroup %s, policy %+v", pg.Name, pg.Spec.SchedulingPolicy.Gang)
				}
			}
			g.Expect(got.Spec.NodeName).NotTo(BeEmpty(), "replacement %s unscheduled; its gang: %s; pod conditions %+v; the other pods: %s",
				got.Name, gang, got.Status.Conditions, podPhases(env.Pods(ctx, g, ns, "job")))
			g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
			replacement = *got
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		env.MakePodExit(ctx, &replacement, "0")
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})

func podPhases(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s %s node=%q", p.Name, p.Status.Phase, p.Spec.NodeName))
	}
	return strings.Join(out, ", ")
}

// Regression spec for a bug found by the chaos harness (seed
// 1795372443393980968, workload w03: Failed(MaxRestartsExceeded), its
// failed pods kept the outcome finalizer for good). The PodClique
// controller released a breach's failed pods only in a pass that saw the
// workload failing, and nothing reconciled the PodClique again once the
// PodCliqueSet controller had written the Failed condition: when the pods
// failed while the operator was down, the restarted operator's first
// PodClique pass raced its first PodCliqueSet pass. Now the PodCliqueSet
// controller releases the pods of an ended workload itself
// (releaseEndedPods).
var _ = Describe("Chaos regression: the failed pods of a breach keep the outcome finalizer after the workload failed", Label("chaos"), func() {
	It("releases the finalizer of every pod once the workload is Failed", func(ctx context.Context) {
		DeferCleanup(func(ctx context.Context) {
			if ok, _ := env.Operator.Running(); !ok {
				Expect(env.Operator.Restart(ctx)).To(Succeed())
			}
		})
		// Several workloads: each is one draw of the race.
		const workloads = 6
		var namespaces []string
		for range workloads {
			ns := env.NewNamespace(ctx, "repro-kept-finalizer")
			namespaces = append(namespaces, ns)
			// worker: 3 pods; server: 1 pod; both run until told to
			// exit. No restart budget.
			worker := framework.CliqueTemplate("worker", 3, framework.PodSpec(0))
			server := framework.CliqueTemplate("server", 1, framework.PodSpec(0))
			pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 0, worker, server)
			Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		}
		workers := map[string][]corev1.Pod{}
		for _, ns := range namespaces {
			Eventually(func(g Gomega) {
				pods := env.LivePods(ctx, g, ns, "job")
				g.Expect(pods).To(HaveLen(4))
				for i := range pods {
					g.Expect(framework.IsReady(&pods[i])).To(BeTrue())
				}
				workers[ns] = env.LivePods(ctx, g, ns, "job", client.MatchingLabels{labels.CliqueTemplateKey: "worker"})
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		}

		By("the workers of every workload fail while the operator is down")
		Expect(env.Operator.Kill()).To(Succeed())
		for _, ns := range namespaces {
			for i := range workers[ns] {
				env.MakePodExit(ctx, &workers[ns][i], "1")
			}
		}
		for _, ns := range namespaces {
			for i := range workers[ns] {
				Eventually(func(g Gomega) {
					p := &corev1.Pod{}
					g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&workers[ns][i]), p)).To(Succeed())
					g.Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
				}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
			}
		}
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		for _, ns := range namespaces {
			Eventually(func(g Gomega) {
				pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
				g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		}

		By("every pod left (the failed workers, kept for their logs) loses the finalizer")
		Eventually(func(g Gomega) {
			var kept []string
			for _, ns := range namespaces {
				for _, p := range env.Pods(ctx, g, ns, "job") {
					if slices.Contains(p.Finalizers, copsev1alpha1.OutcomeFinalizer) {
						kept = append(kept, fmt.Sprintf("%s/%s (%s, deletionTimestamp %v)", ns, p.Name, p.Status.Phase, p.DeletionTimestamp))
					}
				}
			}
			g.Expect(kept).To(BeEmpty(), "pods of Failed workloads that keep %s", copsev1alpha1.OutcomeFinalizer)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})
