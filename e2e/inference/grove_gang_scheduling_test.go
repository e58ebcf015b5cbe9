package inference_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Grove's gang-scheduling scenarios (operator/e2e/tests/gang_scheduling_test.go)
// with the kube-scheduler's gang scheduling on the Workload API in place of
// KAI's PodGangs. Each pod takes a whole node of a private rack, so a
// cordoned node is one pod less room, as in Grove's scenarios.
var _ = Describe("Grove gang scheduling scenarios", Label("inference"), func() {
	It("GS1-GS4: binds a full-replica workload only whole, and each PodCliqueSet or scaling-group replica added by scaling whole", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "grove-gs")
		rack := newPrivateRack(ctx, 28)
		rack.uncordon(ctx, 9) // Grove's GS-4: 28 nodes, 19 cordoned

		By("GS-1: 10 pods that need all 10 and find 9 nodes stay Pending, every one")
		Expect(env.Client.Create(ctx, groveWorkload(namespace, "workload1", groveFull, rack.podSpec()))).To(Succeed())
		expectPods(ctx, namespace, "workload1", 10, 0)

		By("GS-1: one more node and all 10 run, on distinct nodes")
		rack.uncordon(ctx, 1)
		expectPods(ctx, namespace, "workload1", 10, 10)
		expectDistinctNodes(ctx, namespace, "workload1")

		By("GS-2: scaling group replica sg-x-2 (4 pods, a gang of its own) stays wholly Pending with room for 3")
		scaleReplicas(ctx, pcsgRef(namespace, "workload1-0-sg-x"), 3)
		rack.uncordon(ctx, 3)
		expectPods(ctx, namespace, "workload1", 14, 10)

		By("GS-2: with room for 4 it runs")
		rack.uncordon(ctx, 1)
		expectPods(ctx, namespace, "workload1", 14, 14)

		By("GS-3: PodCliqueSet replica 1 (10 pods) stays wholly Pending with room for 9")
		scaleReplicas(ctx, pcsRef(namespace, "workload1"), 2)
		rack.uncordon(ctx, 9)
		expectPods(ctx, namespace, "workload1", 24, 14)

		By("GS-3: with room for 10 it runs")
		rack.uncordon(ctx, 1)
		expectPods(ctx, namespace, "workload1", 24, 24)

		By("GS-4: replica 1's scaling group grows to 3: 4 new pods Pending, then running with room for them")
		scaleReplicas(ctx, pcsgRef(namespace, "workload1-1-sg-x"), 3)
		expectPods(ctx, namespace, "workload1", 28, 24)
		rack.uncordon(ctx, 4)
		expectPods(ctx, namespace, "workload1", 28, 28)
		expectDistinctNodes(ctx, namespace, "workload1")
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, namespace, "workload1").Status.AvailableReplicas).To(Equal(int32(2)))
		}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
	})
})
