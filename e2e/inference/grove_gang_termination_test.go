package inference_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Grove's gang-termination scenarios (operator/e2e/tests/gang_termination_test.go).
// As in Grove, a pod is killed by deleting it after cordoning its node, so
// that its replacement cannot schedule and the breach lasts; a private rack
// of exactly 10 nodes holds the 10 pods, one per node.
var _ = Describe("Grove gang termination scenarios", Label("inference"), func() {
	// deploy creates the workload of shape s with groveTerminationDelay on a
	// rack of 10 nodes and waits for its 10 pods to be Ready.
	deploy := func(ctx context.Context, name string, s groveShape) (string, *privateRack) {
		GinkgoHelper()
		namespace := env.NewNamespace(ctx, "grove-gt")
		rack := newPrivateRack(ctx, 10)
		rack.uncordon(ctx, 10)
		s.terminationDelay = groveTerminationDelay
		Expect(env.Client.Create(ctx, groveWorkload(namespace, name, s, rack.podSpec()))).To(Succeed())
		expectPods(ctx, namespace, name, 10, 10)
		return namespace, rack
	}

	It("GT1, GT2: recreates the whole replica when a full-replica clique, standalone or in the scaling group, loses a pod", func(ctx context.Context) {
		namespace, rack := deploy(ctx, "workload1-gt", groveFull)
		for i, target := range []string{"workload1-gt-0-pc-a", "workload1-gt-0-sg-x-0-pc-c"} {
			By("killing a pod of " + target)
			before := uidsOf(ctx, namespace, "workload1-gt", "")
			killPods(ctx, namespace, "workload1-gt", target, 1)
			expectAllRecreated(ctx, namespace, "workload1-gt", before)
			Eventually(func(g Gomega) {
				// The record of the replica's latest recreation: its attempt counts them.
				recreations := env.GetPodCliqueSet(ctx, g, namespace, "workload1-gt").Status.ReplicaRecreations
				g.Expect(recreations).To(HaveLen(1))
				g.Expect(recreations[0].Reason).To(Equal(copsev1alpha1.RecreationReasonGangTermination))
				g.Expect(recreations[0].Attempt).To(Equal(int32(i + 1)))
			}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
			By("uncordoning: the recreated replica recovers")
			uncordonRack(ctx, rack)
			expectPods(ctx, namespace, "workload1-gt", 10, 10)
		}
	})

	It("GT6, GT3: a pod lost within minAvailable terminates nothing; the clique's last pod lost recreates the replica", func(ctx context.Context) {
		namespace, rack := deploy(ctx, "workload2-gt", groveMin)

		By("GT-6: killing a pod of pc-c in the scaled group replica sg-x-1 (pc-c needs 1 of 3)")
		pcA := uidsOf(ctx, namespace, "workload2-gt", "workload2-gt-0-pc-a")
		killPods(ctx, namespace, "workload2-gt", "workload2-gt-0-sg-x-1-pc-c", 1)
		expectNoTermination(ctx, namespace, "workload2-gt", pcA, 9)
		By("GT-6: uncordoning: the replacement runs")
		uncordonRack(ctx, rack)
		expectPods(ctx, namespace, "workload2-gt", 10, 10)

		By("GT-3: killing one of pc-a's 2 pods (pc-a needs 1): no gang termination")
		all := uidsOf(ctx, namespace, "workload2-gt", "")
		victim := killPods(ctx, namespace, "workload2-gt", "workload2-gt-0-pc-a", 1)
		delete(all, victim[0])
		expectNoTermination(ctx, namespace, "workload2-gt", all, 9)

		By("GT-3: killing pc-a's other pod: the replica is recreated")
		before := uidsOf(ctx, namespace, "workload2-gt", "")
		killPods(ctx, namespace, "workload2-gt", "workload2-gt-0-pc-a", 1)
		expectAllRecreated(ctx, namespace, "workload2-gt", before)
		uncordonRack(ctx, rack)
		expectPods(ctx, namespace, "workload2-gt", 10, 10)
	})

	It("GT4: recreates a breached scaling-group replica alone while the group meets minAvailable, and the whole replica once it does not", func(ctx context.Context) {
		namespace, rack := deploy(ctx, "workload2-gt", groveMin)
		const g0, g1 = "workload2-gt-0-sg-x-0-pc-c", "workload2-gt-0-sg-x-1-pc-c"

		By("killing 1 of sg-x-0's 3 pc-c pods: nothing is terminated")
		all := uidsOf(ctx, namespace, "workload2-gt", "")
		victim := killPods(ctx, namespace, "workload2-gt", g0, 1)
		delete(all, victim[0])
		expectNoTermination(ctx, namespace, "workload2-gt", all, 9)

		By("killing sg-x-0's other 2 pc-c pods: group replica sg-x-0 alone is recreated")
		group0 := uidsOfGroupReplica(ctx, namespace, "workload2-gt", "0")
		group1 := uidsOfGroupReplica(ctx, namespace, "workload2-gt", "1")
		pcA := uidsOf(ctx, namespace, "workload2-gt", "workload2-gt-0-pc-a")
		killPods(ctx, namespace, "workload2-gt", g0, 2)
		Eventually(func(g Gomega) {
			current := uidsOfGroupReplicaG(ctx, g, namespace, "workload2-gt", "0")
			g.Expect(current).To(HaveLen(4), "sg-x-0 has all its pods again")
			for uid := range current {
				g.Expect(group0).NotTo(HaveKey(uid), "a pod of sg-x-0 was not recreated")
			}
		}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
		expectSurvivors(ctx, namespace, "workload2-gt", group1)
		expectSurvivors(ctx, namespace, "workload2-gt", pcA)
		// sg-x-0 stays broken from here on, as in Grove's scenario, so that
		// sg-x-1's breach below leaves the group without an available
		// replica: the node sg-x-0's pc-d pod freed is held too. Without it
		// the replacement of the sg-x-1 pod killed next could run there and
		// leave pc-c 3 Ready pods, of which the last step kills only 2.
		cordonIdleNodes(ctx, rack, namespace, "workload2-gt")

		By("killing 1 of sg-x-1's pc-c pods: no PodCliqueSet-level termination")
		pcA = uidsOf(ctx, namespace, "workload2-gt", "workload2-gt-0-pc-a")
		killPods(ctx, namespace, "workload2-gt", g1, 1)
		// sg-x-0's 4 new pods wait for cordoned nodes, one more pod is gone.
		expectNoTermination(ctx, namespace, "workload2-gt", pcA, 5)

		By("killing sg-x-1's other 2 pc-c pods: no group replica is available, the whole replica is recreated")
		before := uidsOf(ctx, namespace, "workload2-gt", "")
		killPods(ctx, namespace, "workload2-gt", g1, 2)
		expectAllRecreated(ctx, namespace, "workload2-gt", before)
		uncordonRack(ctx, rack)
		expectPods(ctx, namespace, "workload2-gt", 10, 10)
	})

	It("GT5: recreates only the scaling-group replica whose strict clique lost its pods", func(ctx context.Context) {
		namespace, rack := deploy(ctx, "workload5-gt", groveMinStrictC)
		group0 := uidsOfGroupReplica(ctx, namespace, "workload5-gt", "0")
		group1 := uidsOfGroupReplica(ctx, namespace, "workload5-gt", "1")
		pcA := uidsOf(ctx, namespace, "workload5-gt", "workload5-gt-0-pc-a")
		killPods(ctx, namespace, "workload5-gt", "workload5-gt-0-sg-x-0-pc-c", 3)
		Eventually(func(g Gomega) {
			current := uidsOfGroupReplicaG(ctx, g, namespace, "workload5-gt", "0")
			g.Expect(current).To(HaveLen(4), "sg-x-0 has all its pods again")
			for uid := range current {
				g.Expect(group0).NotTo(HaveKey(uid), "a pod of sg-x-0 was not recreated")
			}
		}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, namespace, "workload5-gt").Status.ReplicaRecreations).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(groveTerminationDelay + groveGrace).Should(Succeed())
		expectSurvivors(ctx, namespace, "workload5-gt", group1)
		expectSurvivors(ctx, namespace, "workload5-gt", pcA)
		uncordonRack(ctx, rack)
		expectPods(ctx, namespace, "workload5-gt", 10, 10)
	})
})

// uidsOf are the UIDs of the live pods of a PodCliqueSet, or of one of its
// PodCliques.
func uidsOf(ctx context.Context, namespace, pcsName, pclq string) map[types.UID]bool {
	GinkgoHelper()
	out := map[types.UID]bool{}
	for _, p := range env.LivePods(ctx, Default, namespace, pcsName) {
		if pclq == "" || p.Labels[labels.PodCliqueKey] == pclq {
			out[p.UID] = true
		}
	}
	Expect(out).NotTo(BeEmpty())
	return out
}

func uidsOfGroupReplica(ctx context.Context, namespace, pcsName, j string) map[types.UID]bool {
	return uidsOfGroupReplicaG(ctx, Default, namespace, pcsName, j)
}

func uidsOfGroupReplicaG(ctx context.Context, g Gomega, namespace, pcsName, j string) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range env.LivePods(ctx, g, namespace, pcsName) {
		if p.Labels[labels.ScalingGroupReplicaKey] == j {
			out[p.UID] = true
		}
	}
	return out
}

// killPods cordons the nodes of n Ready pods of a PodClique and deletes the
// pods, returning their UIDs.
func killPods(ctx context.Context, namespace, pcsName, pclq string, n int) []types.UID {
	GinkgoHelper()
	var victims []corev1.Pod
	Eventually(func(g Gomega) {
		victims = nil
		for _, p := range podsOfClique(ctx, g, namespace, pcsName, pclq) {
			if framework.IsReady(&p) && len(victims) < n {
				victims = append(victims, p)
			}
		}
		g.Expect(victims).To(HaveLen(n), "Ready pods of %s", pclq)
	}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
	uids := make([]types.UID, 0, n)
	for i := range victims {
		setCordoned(ctx, victims[i].Spec.NodeName, true)
		Expect(env.Client.Delete(ctx, &victims[i])).To(Succeed())
		uids = append(uids, victims[i].UID)
	}
	return uids
}

// cordonIdleNodes cordons every node of the rack that no live pod of the
// PodCliqueSet is bound to, so that no pod created from now on runs.
func cordonIdleNodes(ctx context.Context, rack *privateRack, namespace, pcsName string) {
	GinkgoHelper()
	busy := map[string]bool{}
	for _, p := range env.LivePods(ctx, Default, namespace, pcsName) {
		busy[p.Spec.NodeName] = true
	}
	for _, name := range rack.nodes {
		if !busy[name] {
			setCordoned(ctx, name, true)
		}
	}
}

func uncordonRack(ctx context.Context, rack *privateRack) {
	GinkgoHelper()
	for _, name := range rack.nodes {
		setCordoned(ctx, name, false)
	}
}

// expectAllRecreated waits until none of before's pods is left and the
// replica has its 10 pods again (Pending ones included, as Grove checks).
func expectAllRecreated(ctx context.Context, namespace, pcsName string, before map[types.UID]bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pods := env.Pods(ctx, g, namespace, pcsName)
		live := 0
		for _, p := range pods {
			g.Expect(before).NotTo(HaveKey(p.UID), "pod %s survived; the pods: %s", p.Name, describePods(pods))
			if p.DeletionTimestamp.IsZero() {
				live++
			}
		}
		g.Expect(live).To(Equal(10), "the pods: %s", describePods(pods))
	}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
}

// describePods says, for a failure message, where each pod is: its
// clique, node, phase, readiness and deletion.
func describePods(pods []corev1.Pod) string {
	var parts []string
	for i := range pods {
		p := &pods[i]
		part := fmt.Sprintf("%s (%s) on %q %s ready=%t", p.Name, p.Labels[labels.PodCliqueKey], p.Spec.NodeName, p.Status.Phase, framework.IsReady(p))
		if !p.DeletionTimestamp.IsZero() {
			part += " deleting"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// expectNoTermination waits past the termination delay and checks that
// every pod of survivors is still there and at least minRunning run.
func expectNoTermination(ctx context.Context, namespace, pcsName string, survivors map[types.UID]bool, minRunning int) {
	GinkgoHelper()
	time.Sleep(groveTerminationDelay + groveGrace)
	expectSurvivors(ctx, namespace, pcsName, survivors)
	running := 0
	for _, p := range env.LivePods(ctx, Default, namespace, pcsName) {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	Expect(running).To(BeNumerically(">=", minRunning))
}

func expectSurvivors(ctx context.Context, namespace, pcsName string, survivors map[types.UID]bool) {
	GinkgoHelper()
	current := map[types.UID]bool{}
	for _, p := range env.LivePods(ctx, Default, namespace, pcsName) {
		current[p.UID] = true
	}
	for uid := range survivors {
		Expect(current).To(HaveKey(uid), "pod %s was terminated", uid)
	}
}
