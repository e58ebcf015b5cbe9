package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var _ = Describe("A TrainJob on a runtime Kubeflow ships", Label("trainjob"), func() {
	It("runs a Kubeflow SDK-shaped TrainJob on torch-distributed to Complete, with jobsStatus from its JobSet", func(ctx context.Context) {
		ns, err := framework.CreateNamespace(ctx, env.Client, "sdk")
		Expect(err).NotTo(HaveOccurred())
		tj := sdkTrainJob(ns, "mnist", "torch-distributed", 2)
		withPods(tj, "node", simulate(3*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("creating the JobSet, owned by the TrainJob, with Kubeflow's torch environment")
		Eventually(func(g Gomega) {
			js, err := jobSetOf(ctx, tj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(metav1.IsControlledBy(js, getTrainJob(ctx, tj))).To(BeTrue())
			g.Expect(*js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism).To(BeEquivalentTo(2))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("reporting the JobSet's replicated jobs while it runs, and Complete with JobSet's reason at the end")
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			g.Expect(got.Status.NumNodes).To(HaveValue(BeEquivalentTo(2)))
			c := condition(got, trainerv1alpha1.TrainJobComplete)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("AllJobsCompleted"))
			g.Expect(got.Status.JobsStatus).To(ContainElement(And(
				HaveField("Name", "node"), HaveField("Succeeded", HaveValue(BeEquivalentTo(1))))))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(podsOf(ctx, tj)).To(HaveLen(2))
	})
})
