package placement_test

// Ports of Grove's auto-MNNVL e2e suite (operator/e2e/tests/auto-mnnvl) for
// the configurations whose cluster serves the ComputeDomain CRD, one spec
// per Grove test, with Grove's manifests and Grove's assertions
// (e2e/placement/grovemnnvl). The configurations without the CRD are in
// e2e/placement/withoutcomputedomains.

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	grove "github.com/copse-dev/copse/e2e/placement/grovemnnvl"
)

// getPodCliqueSet reads a PodCliqueSet that was just created.
func getPodCliqueSet(ctx context.Context, namespace, name string) *copsev1alpha1.PodCliqueSet {
	GinkgoHelper()
	pcs := &copsev1alpha1.PodCliqueSet{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pcs)).To(Succeed())
	return pcs
}

// expectNoComputeDomain is Grove's getComputeDomain returning an error: the
// ComputeDomain name does not exist.
func expectNoComputeDomain(ctx context.Context, namespace, name string) {
	GinkgoHelper()
	_, err := grove.GetComputeDomain(ctx, env.Client, namespace, name)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ComputeDomain %s should not exist: %v", name, err)
}

// Test_AutoMNNVL_SupportedAndEnabled: the placement suite's operator runs
// with mnnvl.enabled, on a cluster that serves the ComputeDomain CRD.
var _ = Describe("Grove auto-MNNVL, supported and enabled", Label("placement"), func() {
	var namespace string
	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "grove-mnnvl")
	})

	It("testNoAnnotationNoMNNVL: a GPU PodCliqueSet without the annotation gets no ComputeDomain and no claim", func(ctx context.Context) {
		const pcsName = "test-gpu-no-mnnvl"
		Expect(grove.Apply(ctx, env.Client, grove.GPUBare, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)

		Expect(getPodCliqueSet(ctx, namespace, pcsName).Annotations).NotTo(HaveKey(copsev1alpha1.AnnotationMNNVLGroup),
			"GPU PCS should NOT receive mnnvl-group annotation automatically")
		grove.ExpectNoChannelClaim(ctx, env.Client, namespace, pcsName+"-0-gpu-worker")
		expectNoComputeDomain(ctx, namespace, pcsName+"-0-default")
		// Grove looks for the one name its own default would have; copse's
		// old default domain was <pcs>-<r>, so no domain of any name may exist.
		domains, err := grove.ComputeDomains(ctx, env.Client, namespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(domains).To(BeEmpty(), "No ComputeDomain should exist for a PCS without MNNVL opt-in")
	})

	It("testScaleOutAndIn: scaling out creates each new replica's ComputeDomain, scaling in deletes the excess ones", func(ctx context.Context) {
		const pcsName = "test-scale-cd"
		Expect(grove.Apply(ctx, env.Client, grove.GPUDefault, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		uid := getPodCliqueSet(ctx, namespace, pcsName).UID

		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 1)
		grove.ExpectComputeDomainContent(ctx, env.Client, namespace, pcsName, 0, "default", uid)

		By("scale out: 1 -> 3")
		Expect(grove.Scale(ctx, env.Client, namespace, pcsName, 3)).To(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 3)
		for replica := range 3 {
			grove.ExpectComputeDomainContent(ctx, env.Client, namespace, pcsName, replica, "default", uid)
		}

		By("scale in: 3 -> 1")
		Expect(grove.Scale(ctx, env.Client, namespace, pcsName, 1)).To(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 1)
		grove.ExpectComputeDomainContent(ctx, env.Client, namespace, pcsName, 0, "default", uid)
		for replica := 1; replica < 3; replica++ {
			expectNoComputeDomain(ctx, namespace, grove.ComputeDomainName(pcsName, replica, "default"))
		}
	})

	It("testPCSDeletionCascadesToCD: deleting the PodCliqueSet deletes its ComputeDomains", func(ctx context.Context) {
		const pcsName = "test-del-cascade"
		Expect(grove.Apply(ctx, env.Client, grove.GPUDefault, namespace, pcsName)).To(Succeed())
		Expect(grove.Scale(ctx, env.Client, namespace, pcsName, 2)).To(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 2)
		grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 0)
	})

	It("testExplicitOptOutHonored: mnnvl-group none gives no ComputeDomain and no claim", func(ctx context.Context) {
		const pcsName = "test-explicit-optout"
		Expect(grove.Apply(ctx, env.Client, grove.GPUOptOut, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		grove.ExpectNoChannelClaim(ctx, env.Client, namespace, pcsName+"-0-gpu-worker")
		expectNoComputeDomain(ctx, namespace, pcsName+"-0-none")
	})

	It("testInvalidAnnotationRejected: an invalid group value is refused", func(ctx context.Context) {
		err := grove.Apply(ctx, env.Client, grove.GPUInvalid, namespace, "test-invalid-annot")
		Expect(err).To(HaveOccurred(), "PCS with invalid mnnvl-group value should be rejected")
		Expect(err.Error()).To(ContainSubstring(`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "invalid value with spaces"`))
	})

	It("testAnnotationImmutability: the group annotation cannot be changed", func(ctx context.Context) {
		const pcsName = "test-annot-immut"
		Expect(grove.Apply(ctx, env.Client, grove.GPUDefault, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		// As Grove's test: retried on a conflict with a controller's write.
		Eventually(func(g Gomega) {
			pcs := getPodCliqueSet(ctx, namespace, pcsName)
			g.Expect(pcs.Annotations).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, "default"))
			pcs.Annotations[copsev1alpha1.AnnotationMNNVLGroup] = "other"
			err := env.Client.Update(ctx, pcs)
			g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "conflict: retry")
			Expect(err).To(HaveOccurred(), "Changing mnnvl-group annotation should be rejected")
			Expect(err.Error()).To(ContainSubstring("immutable"))
		}).WithContext(ctx).WithTimeout(grove.Wait).Should(Succeed())
	})

	It("testCPUPCLQIgnoredEvenWithAnnotation: a CPU clique with the annotation is accepted and gets no claim", func(ctx context.Context) {
		const pcsName = "test-cpu-ignored"
		Expect(grove.Apply(ctx, env.Client, grove.CPUWithAnnotation, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 1)
		grove.ExpectChannelClaim(ctx, env.Client, namespace, pcsName+"-0-gp", pcsName, 0, "default")
		grove.ExpectNoChannelClaim(ctx, env.Client, namespace, pcsName+"-0-cp")
	})

	It("testMNNVLEndToEnd: every inherit, override and none combination, a deleted ComputeDomain, scale out and in, deletion", func(ctx context.Context) {
		const pcsName = "mnnvl-e2e"
		Expect(grove.Apply(ctx, env.Client, grove.ComprehensiveMix, namespace, pcsName)).To(Succeed())
		defer grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		uid := getPodCliqueSet(ctx, namespace, pcsName).UID
		groups := []string{"default", "train", "infer", "batch", "solo"}
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, len(groups))
		for _, group := range groups {
			grove.ExpectComputeDomainContent(ctx, env.Client, namespace, pcsName, 0, group, uid)
		}

		By("a ComputeDomain deleted from outside is made again")
		deleted, err := grove.GetComputeDomain(ctx, env.Client, namespace, pcsName+"-0-default")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Delete(ctx, deleted)).To(Succeed())
		Eventually(func(g Gomega) {
			again, err := grove.GetComputeDomain(ctx, env.Client, namespace, pcsName+"-0-default")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.GetUID()).NotTo(Equal(deleted.GetUID()), "Controller should recreate deleted ComputeDomain")
		}).WithContext(ctx).WithTimeout(grove.Wait).Should(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, len(groups))
		grove.ExpectComputeDomainContent(ctx, env.Client, namespace, pcsName, 0, "default", uid)

		By("the 7 GPU cliques of a group claim its domain")
		for pclq, group := range map[string]string{
			"sa1": "default", "sa2": "train", // standalone: inherit, override
			"g1-0-p1": "default", "g1-0-p2": "infer", // g1 inherits; p1 inherits, p2 overrides
			"g2-0-p4": "train", "g2-0-p5": "batch", // g2 overrides; p4 inherits, p5 overrides
			"g3-0-p8": "solo", // g3 opts out; p8 overrides
		} {
			grove.ExpectChannelClaim(ctx, env.Client, namespace, pcsName+"-0-"+pclq, pcsName, 0, group)
		}
		By("the 5 opted-out cliques claim none")
		for _, pclq := range []string{"sa3", "g1-0-p3", "g2-0-p6", "g3-0-p7", "g3-0-p9"} {
			grove.ExpectNoChannelClaim(ctx, env.Client, namespace, pcsName+"-0-"+pclq)
		}

		By("scale out: 1 -> 4 replicas, 5 domains each")
		Expect(grove.Scale(ctx, env.Client, namespace, pcsName, 4)).To(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 4*len(groups))
		By("scale in: 4 -> 2 replicas")
		Expect(grove.Scale(ctx, env.Client, namespace, pcsName, 2)).To(Succeed())
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 2*len(groups))
		for replica := 2; replica < 4; replica++ {
			for _, group := range groups {
				expectNoComputeDomain(ctx, namespace, grove.ComputeDomainName(pcsName, replica, group))
			}
		}

		By("deleting the PodCliqueSet deletes every domain")
		grove.DeletePodCliqueSet(ctx, env.Client, namespace, pcsName)
		grove.WaitComputeDomainCount(ctx, env.Client, namespace, pcsName, 0)
	})
})

// Test_AutoMNNVL_SupportedButDisabled: the same operator restarted with
// mnnvl.enabled false for these specs, then restored.
var _ = Describe("Grove auto-MNNVL, supported but disabled", Ordered, Label("placement"), func() {
	var namespace string
	BeforeAll(func(ctx context.Context) {
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.Enabled = false })).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.Enabled = true })).To(Succeed())
		})
		namespace = env.NewNamespace(ctx, "grove-mnnvl-off")
	})

	It("testExplicitEnabledAnnotationRejected: a group annotation is refused while MNNVL is disabled", func(ctx context.Context) {
		err := grove.Apply(ctx, env.Client, grove.GPUDefault, namespace, "test-disabled-reject")
		Expect(err).To(HaveOccurred(), "PCS with mnnvl-group annotation should be rejected when feature is disabled")
		Expect(err.Error()).To(ContainSubstring("MNNVL is not enabled in the operator configuration (mnnvl.enabled)"))
	})

	It("testNoMNNVLArtifactsWhenDisabled: nothing of MNNVL without the annotation", func(ctx context.Context) {
		grove.NoArtifactsWhenDisabled(ctx, env.Client, namespace)
	})

	// Not Grove's (Grove has no TrainJob): the same rules for TrainJobs.
	DescribeTable("a TrainJob naming a group is refused, one without gets no claim",
		func(ctx context.Context, backend trainerv1alpha1.RuntimeBackend) {
			tjNamespace := env.NewNamespace(ctx, "mnnvl-tj-off")
			Expect(env.Client.Create(ctx, framework.GPURuntime(tjNamespace, backend))).To(Succeed())
			gpus := int64(env.Topology.Shape.GPUs)
			grouped := framework.GPUTrainJob(tjNamespace, "grouped", 1, gpus)
			grouped.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"}
			Expect(env.Client.Create(ctx, grouped)).To(MatchError(ContainSubstring(
				"MNNVL is not enabled in the operator configuration (mnnvl.enabled)")))
			bare := framework.GPUTrainJob(tjNamespace, "bare", 1, gpus)
			Expect(env.Client.Create(ctx, bare)).To(Succeed())
			Eventually(func(g Gomega) {
				for _, spec := range env.TrainJobPodSpecs(ctx, g, tjNamespace, "bare", backend) {
					g.Expect(spec.ResourceClaims).To(BeEmpty())
				}
				domains, err := grove.ComputeDomains(ctx, env.Client, tjNamespace)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(domains).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(grove.Wait).Should(Succeed())
			Expect(env.Client.Delete(ctx, bare, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
			expectFleetIdle(ctx)
		},
		Entry("on the JobSet backend", trainerv1alpha1.RuntimeBackendJobSet),
		Entry("on the PodCliqueSet backend", trainerv1alpha1.RuntimeBackendPodCliqueSet),
	)
})
