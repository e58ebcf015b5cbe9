package inference_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Grove's scale scenarios (operator/e2e/tests/scale/): a PodCliqueSet of one
// clique of 2 pods scaled up from zero, doubled, halved and scaled down to
// zero, with the checks Grove makes after each step. Grove scales to 500
// replicas (1000 pods) to measure; here the Tiny variants' sizes (5
// replicas, 10 pods), doubled once.
var _ = Describe("Grove scale scenarios", Label("inference"), func() {
	It("ScaleUp_FromZero, ScaleUp, ScaleDown, ScaleDown_ToZero: leaves exactly the target's objects, converged status and nothing terminating", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "grove-scale")
		clique := framework.CliqueTemplate("expert-worker", 2, framework.PodSpec(0))
		clique.Spec.RoleName = "expert"
		clique.Spec.MinAvailable = ptr.To[int32](2)
		pcs := framework.NewPodCliqueSet(namespace, "scale", 0, clique)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		expectScaledTo(ctx, namespace, "scale", 0)

		for _, target := range []int32{5, 10, 5, 0} {
			By(fmt.Sprintf("scaling to %d replicas", target))
			scaleReplicas(ctx, pcsRef(namespace, "scale"), target)
			expectScaledTo(ctx, namespace, "scale", target)
		}
	})
})

// expectScaledTo checks what Grove's scale scenarios check once a
// PodCliqueSet of one 2-pod clique is at target replicas: exactly target
// PodCliques and gangs and 2*target Ready pods, none of a replica at or
// beyond target and none terminating, no scaling group, and the
// PodCliqueSet's and PodCliques' status converged without errors.
func expectScaledTo(ctx context.Context, namespace, pcsName string, target int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ns, partOf := client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: pcsName}

		pods := env.Pods(ctx, g, namespace, pcsName)
		g.Expect(pods).To(HaveLen(int(2 * target)))
		for _, p := range pods {
			g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s is terminating", p.Name)
			g.Expect(framework.IsReady(&p)).To(BeTrue(), "pod %s is not Ready", p.Name)
			expectReplicaBelow(g, p.Labels, target, "pod "+p.Name)
		}

		var cliques copsev1alpha1.PodCliqueList
		g.Expect(env.Client.List(ctx, &cliques, ns, partOf)).To(Succeed())
		g.Expect(cliques.Items).To(HaveLen(int(target)))
		for _, pclq := range cliques.Items {
			g.Expect(pclq.DeletionTimestamp).To(BeNil(), "PodClique %s is terminating", pclq.Name)
			expectReplicaBelow(g, pclq.Labels, target, "PodClique "+pclq.Name)
			g.Expect(pclq.Status.ObservedGeneration).To(HaveValue(Equal(pclq.Generation)), "PodClique %s", pclq.Name)
			g.Expect(pclq.Status.ReadyReplicas).To(Equal(pclq.Spec.Replicas), "PodClique %s", pclq.Name)
			g.Expect(pclq.Status.LastErrors).To(BeEmpty(), "PodClique %s", pclq.Name)
		}

		var groups copsev1alpha1.PodCliqueScalingGroupList
		g.Expect(env.Client.List(ctx, &groups, ns, partOf)).To(Succeed())
		g.Expect(groups.Items).To(BeEmpty())

		// Grove's PodGangs are the Workload API's PodGroups here.
		var gangs schedulingv1beta1.PodGroupList
		g.Expect(env.Client.List(ctx, &gangs, ns)).To(Succeed())
		g.Expect(gangs.Items).To(HaveLen(int(target)))
		for _, pg := range gangs.Items {
			g.Expect(pg.DeletionTimestamp).To(BeNil(), "PodGroup %s is terminating", pg.Name)
			expectReplicaBelow(g, pg.Labels, target, "PodGroup "+pg.Name)
		}

		pcs := env.GetPodCliqueSet(ctx, g, namespace, pcsName)
		g.Expect(pcs.Spec.Replicas).To(Equal(target))
		g.Expect(pcs.Status.Replicas).To(Equal(target))
		g.Expect(pcs.Status.AvailableReplicas).To(Equal(target))
		g.Expect(pcs.Status.ObservedGeneration).To(HaveValue(Equal(pcs.Generation)))
		g.Expect(pcs.Status.LastErrors).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(groveWait).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// expectReplicaBelow fails g when an object's replica label is target or more:
// a leftover of a larger scale.
func expectReplicaBelow(g Gomega, objLabels map[string]string, target int32, what string) {
	if r, ok := labels.Index(objLabels, labels.ReplicaKey); ok {
		g.Expect(r).To(BeNumerically("<", target), "%s is of replica %d, beyond the target %d", what, r, target)
	}
}
