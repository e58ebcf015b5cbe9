package core_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
)

func setUnschedulable(ctx context.Context, nodeName string, unschedulable bool) {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = unschedulable
	Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
}

var _ = Describe("Breach handling for Inference", Label("core"), func() {
	It("replaces a pod that exits 1 with a new pod at the same index", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "replace")
		spec := podSpec(0)
		spec.RestartPolicy = corev1.RestartPolicyNever // so the exit ends the pod instead of restarting the container
		pcs := newPCS(namespace, "serve", 1, cliqueTemplate("worker", 2, spec))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var victim corev1.Pod
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, g, namespace, "serve")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(isReady(&p)).To(BeTrue())
				if p.Labels[labels.PodIndexKey] == "1" {
					victim = p
				}
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		env.MakePodExit(ctx, &victim, "1")
		Eventually(func(g Gomega) {
			old := &corev1.Pod{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(&victim), old)
			if err == nil {
				g.Expect(old.Status.Phase).To(Equal(corev1.PodFailed), "the pod must have ended Failed")
			}
			pods := podsOf(ctx, g, namespace, "serve")
			g.Expect(pods).To(HaveLen(2))
			var replacement *corev1.Pod
			for i := range pods {
				if pods[i].Labels[labels.PodIndexKey] == "1" && pods[i].UID != victim.UID {
					replacement = &pods[i]
				}
			}
			g.Expect(replacement).NotTo(BeNil(), "no replacement at index 1")
			g.Expect(replacement.Spec.Hostname).To(Equal(victim.Spec.Hostname))
			g.Expect(isReady(replacement)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})

	It("recreates a replica whose breach outlasts terminationDelay, exactly once", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "breach")
		const delay = 4 * time.Second

		// A rack of exactly 2 nodes for a clique of 2 pods x 4 GPUs, so a
		// replacement has nowhere to go once a node is cordoned.
		nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 8, Rack: 0, Count: 2})
		Expect(err).NotTo(HaveOccurred())
		spec := podSpec(4)
		spec.RestartPolicy = corev1.RestartPolicyNever
		spec.NodeSelector = map[string]string{cluster.LabelRack: rackOf(ctx, nodes[0])}
		pcs := newPCS(namespace, "svc", 1, cliqueTemplate("worker", 2, spec))
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: delay}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		pclqKey := client.ObjectKey{Namespace: namespace, Name: "svc-0-worker"}
		var firstClique copsev1alpha1.PodClique
		var victim corev1.Pod
		Eventually(func(g Gomega) {
			g.Expect(getPCS(ctx, g, namespace, "svc").Status.AvailableReplicas).To(Equal(int32(1)))
			g.Expect(env.Client.Get(ctx, pclqKey, &firstClique)).To(Succeed())
			pods := podsOf(ctx, g, namespace, "svc")
			g.Expect(pods).To(HaveLen(2))
			victim = pods[0]
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("cordoning the victim's node and making the victim exit 1: its replacement cannot schedule")
		setUnschedulable(ctx, victim.Spec.NodeName, true)
		DeferCleanup(setUnschedulable, victim.Spec.NodeName, false)
		env.MakePodExit(ctx, &victim, "1")

		By("waiting for the replica to be recreated")
		var recreatedAt time.Time
		Eventually(func(g Gomega) {
			got := getPCS(ctx, g, namespace, "svc")
			g.Expect(got.Status.ReplicaRecreations).To(HaveLen(1))
			rec := got.Status.ReplicaRecreations[0]
			g.Expect(rec.Reason).To(Equal(copsev1alpha1.RecreationReasonGangTermination))
			g.Expect(rec.Attempt).To(Equal(int32(1)))
			g.Expect(rec.CompletedAt).NotTo(BeNil())
			current := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, pclqKey, current)).To(Succeed())
			g.Expect(current.UID).NotTo(Equal(firstClique.UID), "the PodClique was not recreated")
			g.Expect(current.Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"))
			recreatedAt = rec.StartedAt.Time
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(recreatedAt).NotTo(BeZero())

		By("checking it happens exactly once while the new replica cannot become available")
		var secondUID types.UID
		Consistently(func(g Gomega) {
			got := getPCS(ctx, g, namespace, "svc")
			g.Expect(got.Status.ReplicaRecreations).To(HaveLen(1))
			g.Expect(got.Status.ReplicaRecreations[0].Attempt).To(Equal(int32(1)))
			current := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, pclqKey, current)).To(Succeed())
			if secondUID == "" {
				secondUID = current.UID
			}
			g.Expect(current.UID).To(Equal(secondUID), "the replica was recreated a second time")
			g.Expect(env.EventsWithReason(ctx, g, namespace, "GangTermination")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(3 * delay).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("uncordoning: the recreated replica becomes available, with attempt-1 pods")
		setUnschedulable(ctx, victim.Spec.NodeName, false)
		Eventually(func(g Gomega) {
			g.Expect(getPCS(ctx, g, namespace, "svc").Status.AvailableReplicas).To(Equal(int32(1)))
			pods := podsOf(ctx, g, namespace, "svc")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Labels).To(HaveKeyWithValue(labels.AttemptKey, "1"))
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})
