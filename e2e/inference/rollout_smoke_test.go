package inference_test

import (
	"context"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// rolloutWait bounds one rolling update of a small PodCliqueSet on
// simulated nodes (pods become Ready within seconds).
const rolloutWait = 3 * time.Minute

// smokePCS is a 2-replica Inference PodCliqueSet with one standalone clique
// (frontend, 2 pods) and one scaling group (decode: 2 group replicas of one
// worker pod, minAvailable 1), so each replica has a base gang and one
// scaling-group gang of its own.
func smokePCS(namespace, name string) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewPodCliqueSet(namespace, name, 2,
		framework.CliqueTemplate("frontend", 2, framework.PodSpec(0)),
		framework.CliqueTemplate("worker", 1, framework.PodSpec(0)))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
	}
	return pcs
}

// setTemplate changes a PodCliqueSet's spec, retrying on conflicts.
func setTemplate(ctx context.Context, namespace, name string, change func(*copsev1alpha1.PodCliqueSet)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
		change(pcs)
		g.Expect(env.Client.Update(ctx, pcs)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

var _ = Describe("Rolling update smoke", Label("inference"), func() {
	It("replaces every pod of a new image replica by replica and reports it as Grove does", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "rollout-smoke")
		Expect(env.Client.Create(ctx, smokePCS(namespace, "svc"))).To(Succeed())
		// 2 replicas x (2 frontend + 2 group replicas x 1 worker).
		env.ReadyPods(ctx, namespace, "svc", 8, rolloutWait)
		var firstHash string
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, namespace, "svc")
			g.Expect(pcs.Status.CurrentGenerationHash).NotTo(BeNil())
			g.Expect(pcs.Status.UpdatedReplicas).To(Equal(int32(2)))
			g.Expect(pcs.Status.UpdateProgress).To(BeNil(), "creating a PodCliqueSet is no update")
			firstHash = *pcs.Status.CurrentGenerationHash
		}).WithContext(ctx).WithTimeout(rolloutWait).Should(Succeed())

		By("changing the image of both cliques")
		setTemplate(ctx, namespace, "svc", func(pcs *copsev1alpha1.PodCliqueSet) {
			for _, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.Containers[0].Image = "example.com/app:2"
			}
		})

		By("waiting for every pod to run the new image and the update to end")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, namespace, "svc")
			g.Expect(pcs.Status.CurrentGenerationHash).NotTo(Equal(&firstHash))
			g.Expect(pcs.Status.UpdateProgress).NotTo(BeNil())
			g.Expect(pcs.Status.UpdateProgress.UpdateEndedAt).NotTo(BeNil(), "the update has not ended")
			g.Expect(pcs.Status.UpdateProgress.CurrentlyUpdating).To(BeEmpty())
			g.Expect(pcs.Status.UpdatedReplicas).To(Equal(int32(2)))
			pods := env.Pods(ctx, g, namespace, "svc")
			g.Expect(pods).To(HaveLen(8))
			for i := range pods {
				g.Expect(pods[i].Spec.Containers[0].Image).To(Equal("example.com/app:2"), "pod %s", pods[i].Name)
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s", pods[i].Name)
			}
			var cliques copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace))).To(Succeed())
			for _, c := range cliques.Items {
				g.Expect(c.Status.UpdatedReplicas).To(Equal(c.Spec.Replicas), "PodClique %s", c.Name)
				g.Expect(c.Status.CurrentPodCliqueSetGenerationHash).To(Equal(pcs.Status.CurrentGenerationHash), "PodClique %s", c.Name)
			}
			var groups copsev1alpha1.PodCliqueScalingGroupList
			g.Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
			for _, sg := range groups.Items {
				g.Expect(sg.Status.UpdatedReplicas).To(Equal(int32(2)), "PodCliqueScalingGroup %s", sg.Name)
				g.Expect(sg.Status.CurrentPodCliqueSetGenerationHash).To(Equal(pcs.Status.CurrentGenerationHash), "PodCliqueScalingGroup %s", sg.Name)
			}
		}).WithContext(ctx).WithTimeout(rolloutWait).Should(Succeed())

		By("checking the events: one update, each replica started and updated once, in index order")
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, namespace, "RollingUpdateStarted")).To(HaveLen(1))
			g.Expect(env.EventsWithReason(ctx, g, namespace, "ReplicaUpdateStarted")).To(HaveLen(2))
			g.Expect(env.EventsWithReason(ctx, g, namespace, "ReplicaUpdated")).To(HaveLen(2))
			g.Expect(env.EventsWithReason(ctx, g, namespace, "RollingUpdateCompleted")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("propagates replicas and minAvailable of the template to the PodCliques, scaling groups and gangs", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "rollout-counts")
		Expect(env.Client.Create(ctx, smokePCS(namespace, "svc"))).To(Succeed())
		env.ReadyPods(ctx, namespace, "svc", 8, rolloutWait)

		By("changing the frontend's replicas and minAvailable, and the scaling group's")
		setTemplate(ctx, namespace, "svc", func(pcs *copsev1alpha1.PodCliqueSet) {
			pcs.Spec.Template.Cliques[0].Spec.Replicas = 3
			pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](2)
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](2)
		})
		Eventually(func(g Gomega) {
			for _, replica := range []string{"0", "1"} {
				frontend := &copsev1alpha1.PodClique{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "svc-" + replica + "-frontend"}, frontend)).To(Succeed())
				g.Expect(frontend.Spec.Replicas).To(Equal(int32(3)))
				g.Expect(frontend.Spec.MinAvailable).To(Equal(ptr.To[int32](2)))
				group := &copsev1alpha1.PodCliqueScalingGroup{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "svc-" + replica + "-decode"}, group)).To(Succeed())
				g.Expect(group.Spec.Replicas).To(Equal(int32(3)))
				g.Expect(group.Spec.MinAvailable).To(Equal(ptr.To[int32](2)))
				// The base gang now holds 2 frontend pods and 2 group replicas.
				gang := &schedulingv1beta1.PodGroup{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "svc-" + replica}, gang)).To(Succeed())
				g.Expect(gang.Spec.SchedulingPolicy.Gang).NotTo(BeNil())
				g.Expect(gang.Spec.SchedulingPolicy.Gang.MinCount).To(Equal(int32(4)))
			}
			// 2 replicas x (3 frontend + 3 group replicas x 1 worker).
			pods := env.LivePods(ctx, g, namespace, "svc")
			g.Expect(pods).To(HaveLen(12))
			for i := range pods {
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s", pods[i].Name)
			}
		}).WithContext(ctx).WithTimeout(rolloutWait).Should(Succeed())

		By("scaling a PodClique by hand: the template's unchanged count does not undo it")
		Eventually(func(g Gomega) {
			frontend := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "svc-0-frontend"}, frontend)).To(Succeed())
			frontend.Spec.Replicas = 4
			g.Expect(env.Client.Update(ctx, frontend)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		setTemplate(ctx, namespace, "svc", func(pcs *copsev1alpha1.PodCliqueSet) {
			// A write that wakes the controller without changing a count.
			pcs.Labels = map[string]string{"touched": "yes"}
		})
		Consistently(func(g Gomega) {
			frontend := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "svc-0-frontend"}, frontend)).To(Succeed())
			g.Expect(frontend.Spec.Replicas).To(Equal(int32(4)))
			g.Expect(frontend.Annotations).To(HaveKeyWithValue(labels.TemplateReplicasAnnotation, "3"))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
	})
})
