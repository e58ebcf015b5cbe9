package training_test

import (
	"context"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// These specs delete the children of a running Training PodCliqueSet from
// outside, as a user or a script might: each is a breach of its replica,
// which restarts within the budget; the budget is never refilled and a
// fresh child never runs the old run's work again beside it.
var _ = Describe("Children deleted from outside", Label("training"), func() {
	It("restarts the replica whose PodClique or scaling group was deleted, counted; the new run never meets the old; the budget runs out", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "deleted-children")
		leader := framework.CliqueTemplate("leader", 1, framework.PodSpec(0))
		worker := framework.CliqueTemplate("worker", 1, framework.PodSpec(0))
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 2, 1, leader, worker)
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 3)
		replica1 := runningPods(ctx, ns, "job", "1", "0", 3)

		By("deleting replica 0's leader PodClique: replica 0 restarts, counted, and its new run starts only once the old one is gone")
		Expect(env.Client.Delete(ctx, &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job-0-leader"}})).To(Succeed())
		Eventually(func(g Gomega) {
			pods := env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.ReplicaKey: "0"})
			var oldRun, newRun []string
			for _, p := range pods {
				if p.Labels[labels.AttemptKey] == "0" {
					oldRun = append(oldRun, p.Name)
				} else {
					newRun = append(newRun, p.Name)
				}
			}
			g.Expect(newRun).NotTo(BeEmpty(), "no pod of the new run yet")
			Expect(oldRun).To(BeEmpty(), "pods of the new run %v exist beside the old run's %v", newRun, oldRun)
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		runningPods(ctx, ns, "job", "0", "1", 3)
		got := env.GetPodCliqueSet(ctx, Default, ns, "job")
		Expect(got.Status.RestartCount).To(Equal(int32(1)), "the deletion is a breach counted against maxRestarts")
		Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		Expect(env.EventsWithReason(ctx, Default, ns, "PodCliqueFailed")).To(ContainElement(
			HaveField("Note", ContainSubstring("job-0-leader (deleted from outside)"))))
		Expect(env.EventsWithReason(ctx, Default, ns, "ReplicaRestarting")).To(HaveLen(1))
		for _, p := range replica1 {
			live := env.LivePods(ctx, Default, ns, "job", client.MatchingLabels{labels.ReplicaKey: "1"})
			Expect(live).To(ContainElement(HaveField("UID", p.UID)), "replica 1 was left alone")
		}

		By("deleting replica 1's scaling group with the budget spent: the workload fails, its pods terminated")
		Expect(env.Client.Delete(ctx, &copsev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job-1-workers"}})).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			cond := failedCondition(got)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded))
			g.Expect(got.Status.RestartCount).To(Equal(int32(1)))
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.EventsWithReason(ctx, Default, ns, "PodCliqueFailed")).To(ContainElement(
			HaveField("Note", ContainSubstring("job-1-workers (deleted from outside)"))))
	})
})
