package withoutcomputedomains_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	grove "github.com/copse-dev/copse/e2e/placement/grovemnnvl"
	"github.com/copse-dev/copse/internal/mnnvl"
)

var _ = Describe("the cluster", Label("placement"), func() {
	It("serves no ComputeDomain kind, as Grove's unsupported configurations need", func(ctx context.Context) {
		_, err := env.Client.RESTMapper().RESTMapping(mnnvl.ComputeDomainGVK.GroupKind(), mnnvl.ComputeDomainGVK.Version)
		Expect(meta.IsNoMatchError(err)).To(BeTrue(), "RESTMapping of ComputeDomain: %v", err)
	})
})

// Test_AutoMNNVL_UnsupportedAndDisabled: the suite's operator runs with
// mnnvl.enabled false.
var _ = Describe("Grove auto-MNNVL, unsupported and disabled", Label("placement"), func() {
	It("testNoMNNVLArtifactsWhenDisabled: nothing of MNNVL without the annotation", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "grove-mnnvl-unsupported")
		grove.NoArtifactsWhenDisabled(ctx, env.Client, namespace)
	})

	DescribeTable("a TrainJob gets no channel claim, and a group is refused",
		func(ctx context.Context, backend trainerv1alpha1.RuntimeBackend) {
			namespace := env.NewNamespace(ctx, "mnnvl-tj-unsupported")
			Expect(env.Client.Create(ctx, framework.GPURuntime(namespace, backend))).To(Succeed())
			grouped := framework.GPUTrainJob(namespace, "grouped", 1, 4)
			grouped.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"}
			Expect(env.Client.Create(ctx, grouped)).To(MatchError(ContainSubstring(
				"MNNVL is not enabled in the operator configuration (mnnvl.enabled)")))
			Expect(env.Client.Create(ctx, framework.GPUTrainJob(namespace, "bare", 1, 4))).To(Succeed())

			var specs []corev1.PodSpec
			Eventually(func(g Gomega) {
				specs = env.TrainJobPodSpecs(ctx, g, namespace, "bare", backend)
			}).WithContext(ctx).WithTimeout(grove.Wait).Should(Succeed())
			for _, spec := range specs {
				Expect(mnnvl.RequestsGPUs(&spec)).To(BeTrue())
				Expect(spec.ResourceClaims).To(BeEmpty())
			}
		},
		Entry("on the JobSet backend", trainerv1alpha1.RuntimeBackendJobSet),
		Entry("on the PodCliqueSet backend", trainerv1alpha1.RuntimeBackendPodCliqueSet),
	)
})

// Test_AutoMNNVL_UnsupportedButEnabled: the operator restarted with
// mnnvl.enabled exits, then the suite's configuration is restored.
var _ = Describe("Grove auto-MNNVL, unsupported but enabled", Label("placement"), func() {
	It("testOperatorExitsWithoutCDCRD: the operator fails its MNNVL preflight check and exits", func(ctx context.Context) {
		err := env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.Enabled = true })
		// Restored before anything is checked, so that the next specs (and
		// the health check after this one) have an operator.
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.Enabled = false })).To(Succeed())
		Expect(err).To(HaveOccurred(), "Operator should terminate on preflight failure")
		// The error carries the process's exit and its last log lines.
		Expect(err.Error()).To(ContainSubstring("copse-operator exited before it was ready (exit status 1)"))
		Expect(err.Error()).To(And(ContainSubstring("MNNVL preflight check failed"), ContainSubstring("ComputeDomain CRD")),
			"Operator logs should show preflight failure due to missing CRD")
		Expect(err.Error()).To(ContainSubstring(mnnvl.ComputeDomainCRD))
	})
})
