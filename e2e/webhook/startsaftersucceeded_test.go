package webhook_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

// withInitializer is a Training PodCliqueSet of newPodCliqueSet (leader,
// worker in scaling group decode) plus a standalone clique "init", whose
// leader starts after init succeeded.
func withInitializer(namespace, name string) *copsev1alpha1.PodCliqueSet {
	pcs := newPodCliqueSet(namespace, name, copsev1alpha1.WorkloadTypeTraining)
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, clique("init", 1))
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{
		{Clique: "leader", Cliques: []string{"init"}},
	}}
	return pcs
}

var _ = Describe("startsAfterSucceeded admission", Label("webhook"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "after-success")
	})

	It("admits a clique waiting for a standalone clique's success", func(ctx context.Context) {
		Expect(env.Client.Create(ctx, withInitializer(namespace, "ok"))).To(Succeed())
	})

	DescribeTable("refuses startsAfterSucceeded that could never be met, naming the field and the rule",
		func(ctx context.Context, change func(*copsev1alpha1.PodCliqueSet), fragments ...string) {
			pcs := withInitializer(namespace, "invalid")
			change(pcs)
			expectDenial(env.Client.Create(ctx, pcs), validatePodCliqueSet, fragments...)
		},
		Entry("a waiting clique that does not exist", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded[0].Clique = "ghost"
		}, `spec.trainingSpec.startsAfterSucceeded[0].clique: Invalid value: "ghost": must name a clique of spec.template.cliques`),
		Entry("waiting for a clique that does not exist", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded[0].Cliques = []string{"init", "ghost"}
		}, `spec.trainingSpec.startsAfterSucceeded[0].cliques[1]: Invalid value: "ghost": must name a clique of spec.template.cliques`),
		Entry("waiting for itself", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded[0].Cliques = []string{"leader"}
		}, `spec.trainingSpec.startsAfterSucceeded[0].cliques[0]: Invalid value: "leader": a clique cannot start after its own success`),
		Entry("waiting for a clique of a scaling group", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded[0].Cliques = []string{"worker"}
		}, `spec.trainingSpec.startsAfterSucceeded[0].cliques[0]: Invalid value: "worker": must name a clique outside any scaling group (it is in "decode")`),
		Entry("a cycle of success", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded = append(p.Spec.TrainingSpec.StartsAfterSucceeded,
				copsev1alpha1.CliqueSuccessDependency{Clique: "init", Cliques: []string{"leader"}})
		}, `spec.trainingSpec.startsAfterSucceeded: Invalid value: "leader -> init -> leader": startsAfterSucceeded, with the start order of cliqueStartupType, must not form a cycle`),
		Entry("a cycle through startsAfter", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
			p.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"leader"}
		}, `spec.trainingSpec.startsAfterSucceeded: Invalid value: "leader -> init -> leader": startsAfterSucceeded, with the start order of cliqueStartupType, must not form a cycle`),
	)

	It("refuses startsAfterSucceeded on an Inference workload (the CRD's trainingSpec rule)", func(ctx context.Context) {
		pcs := withInitializer(namespace, "inference")
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, pcs), "", "spec.trainingSpec is allowed only when spec.workloadType is Training")
	})

	It("keeps startsAfterSucceeded as created", func(ctx context.Context) {
		pcs := withInitializer(namespace, "fixed")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		expectDenial(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded = nil
		}), validatePodCliqueSet, "spec.trainingSpec.startsAfterSucceeded: Forbidden: is immutable when spec.workloadType is Training: it decides the replicas' gangs")
	})
})
