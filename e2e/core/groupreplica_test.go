package core_test

import (
	"context"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
)

var _ = Describe("Scaling-group replica recreation for Inference", Label("core"), func() {
	It("recreates a group replica that stays breached while the group still meets minAvailable, and nothing else", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "group-replica")
		const delay = 4 * time.Second

		// A rack of exactly 4 nodes for 2 group replicas x 2 pods x 4 GPUs,
		// so a replacement has nowhere to go once a node is cordoned.
		nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 9, Rack: 0, Count: 4})
		Expect(err).NotTo(HaveOccurred())
		spec := podSpec(4)
		spec.RestartPolicy = corev1.RestartPolicyNever
		spec.NodeSelector = map[string]string{cluster.LabelRack: rackOf(ctx, nodes[0])}
		pcs := newPCS(namespace, "svc", 1, cliqueTemplate("worker", 2, spec))
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: delay}
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		keep := client.ObjectKey{Namespace: namespace, Name: "svc-0-decode-0-worker"}
		broken := client.ObjectKey{Namespace: namespace, Name: "svc-0-decode-1-worker"}
		var kept, first copsev1alpha1.PodClique
		var victim corev1.Pod
		Eventually(func(g Gomega) {
			g.Expect(getPCS(ctx, g, namespace, "svc").Status.AvailableReplicas).To(Equal(int32(1)))
			g.Expect(env.Client.Get(ctx, keep, &kept)).To(Succeed())
			g.Expect(env.Client.Get(ctx, broken, &first)).To(Succeed())
			pods := podsOf(ctx, g, namespace, "svc", client.MatchingLabels{labels.PodCliqueKey: broken.Name})
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(isReady(&p)).To(BeTrue())
			}
			victim = pods[0]
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("breaking group replica 1: its failed pod's replacement cannot schedule")
		setUnschedulable(ctx, victim.Spec.NodeName, true)
		DeferCleanup(setUnschedulable, victim.Spec.NodeName, false)
		env.MakePodExit(ctx, &victim, "1")

		By("waiting for group replica 1, and only it, to be recreated")
		var second types.UID
		Eventually(func(g Gomega) {
			current := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, broken, current)).To(Succeed())
			g.Expect(current.UID).NotTo(Equal(first.UID), "group replica 1 was not recreated")
			second = current.UID
			g.Expect(env.EventsWithReason(ctx, g, namespace, "GroupReplicaRecreated")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Consistently(func(g Gomega) {
			current := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, broken, current)).To(Succeed())
			g.Expect(current.UID).To(Equal(second), "group replica 1 was recreated a second time")
			untouched := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, keep, untouched)).To(Succeed())
			g.Expect(untouched.UID).To(Equal(kept.UID), "group replica 0 must be left alone")
			g.Expect(getPCS(ctx, g, namespace, "svc").Status.ReplicaRecreations).To(BeEmpty(), "the PodCliqueSet replica is not recreated")
		}).WithContext(ctx).WithTimeout(3 * delay).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("uncordoning: the recreated group replica becomes available")
		setUnschedulable(ctx, victim.Spec.NodeName, false)
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, g, namespace, "svc", client.MatchingLabels{labels.PodCliqueKey: broken.Name})
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(isReady(&p)).To(BeTrue())
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})
