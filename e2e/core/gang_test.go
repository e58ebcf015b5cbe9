package core_test

import (
	"time"

	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
)

var _ = Describe("Gang scheduling of PodCliqueSet replicas", Label("core"), func() {
	It("binds one replica whole and leaves the other wholly Pending until nodes are added", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "gang")

		// A rack of its own with 2 nodes x 4 GPUs = 8 GPUs. Each replica is
		// 3 pods x 2 GPUs = 6 GPUs: one replica fits, the second finds only
		// 2 GPUs — room for one of its pods, which a gang must not take.
		nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 7, Rack: 0, Count: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(2))
		rack := rackOf(ctx, nodes[0])

		spec := podSpec(2)
		spec.NodeSelector = map[string]string{cluster.LabelRack: rack}
		pcs := newPCS(namespace, "gang", 2, cliqueTemplate("worker", 3, spec))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("waiting until the scheduler judged both gangs")
		var bound, pending string
		Eventually(func(g Gomega) {
			var groups schedulingv1beta1.PodGroupList
			g.Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
			g.Expect(groups.Items).To(HaveLen(2))
			bound, pending = "", ""
			for _, pg := range groups.Items {
				cond := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
				g.Expect(cond).NotTo(BeNil(), "PodGroup %s not judged yet", pg.Name)
				if cond.Status == metav1.ConditionTrue {
					bound = pg.Labels[labels.ReplicaKey]
				} else {
					g.Expect(cond.Reason).To(Equal(schedulingv1beta1.PodGroupReasonUnschedulable))
					pending = pg.Labels[labels.ReplicaKey]
				}
			}
			g.Expect(bound).NotTo(BeEmpty())
			g.Expect(pending).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("checking that no pod of the pending replica is bound, for a while")
		Consistently(func(g Gomega) {
			pods := podsOf(ctx, g, namespace, "gang")
			g.Expect(pods).To(HaveLen(6))
			for _, p := range pods {
				if p.Labels[labels.ReplicaKey] == bound {
					g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s of the bound replica is not bound", p.Name)
				} else {
					g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s of the pending replica was bound: a partial gang", p.Name)
					g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
				}
			}
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("adding a node to the rack: the pending replica schedules whole")
		_, err = env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 7, Rack: 0, Count: 1})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, g, namespace, "gang")
			g.Expect(pods).To(HaveLen(6))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s not bound", p.Name)
				g.Expect(isReady(&p)).To(BeTrue(), "pod %s not ready", p.Name)
			}
			g.Expect(getPCS(ctx, g, namespace, "gang").Status.AvailableReplicas).To(Equal(int32(2)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})

func rackOf(ctx context.Context, nodeName string) string {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
	rack := node.Labels[cluster.LabelRack]
	Expect(rack).NotTo(BeEmpty())
	return rack
}
