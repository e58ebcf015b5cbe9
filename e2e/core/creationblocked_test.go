package core_test

import (
	"context"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/naming"
)

// The status of a PodClique always says why its pods are not created. A
// PodCliqueSet shares a ResourceClaim, made from a ResourceClaimTemplate
// that does not exist yet, with all its replicas: the claim cannot be made,
// the pods that refer to it are not created, and the PodClique's condition
// PodCreationBlocked says they wait for it, naming it. Once the template
// exists the claim is made, the pods come, and the condition turns False.
var _ = Describe("Why no pod is created", Label("core"), func() {
	It("says in the PodClique's status that its pods wait for a ResourceClaim, and creates them once it exists", func(ctx context.Context) {
		namespace, err := framework.CreateNamespace(ctx, env.Client, "wait-claim")
		Expect(err).NotTo(HaveOccurred())
		pcs := newPCS(namespace, "wait", 1, cliqueTemplate("worker", 2, podSpec(0)))
		pcs.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{
			Name: "later", Scope: grovecorev1alpha1.ResourceSharingScopeAllReplicas}}}
		env.CreatePodCliqueSet(ctx, pcs, longWait)
		pclq := client.ObjectKey{Namespace: namespace, Name: naming.StandalonePodClique("wait", 0, "worker")}
		claim := naming.SharedClaim("wait", "later")

		By("the condition names the claim the pods wait for, and no pod is created")
		creationBlocked := func(g Gomega) *metav1.Condition {
			var got copsev1alpha1.PodClique
			g.Expect(env.Client.Get(ctx, pclq, &got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked)
			g.Expect(cond).NotTo(BeNil(), "PodClique %s has no %s condition", pclq.Name, copsev1alpha1.ConditionTypePodCreationBlocked)
			return cond
		}
		Eventually(func(g Gomega) {
			cond := creationBlocked(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonWaitingForResourceClaims))
			g.Expect(cond.Message).To(ContainSubstring(claim))
		}).WithContext(ctx).WithTimeout(shortWait).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, namespace, "wait")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())

		By("once the template exists, the claim is made, the pods are created and the condition turns False")
		template := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "later"},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{Name: "device", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "absent.wait-claim.copse.dev"}}}}}}}
		Expect(env.Client.Create(ctx, template)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.LivePods(ctx, g, namespace, "wait")).To(HaveLen(2))
			cond := creationBlocked(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%s: %s", cond.Reason, cond.Message)
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonCreationAllowed))
		}).WithContext(ctx).WithTimeout(shortWait).Should(Succeed())
	})
})
