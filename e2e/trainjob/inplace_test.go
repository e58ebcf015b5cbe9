package trainjob_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/trainjob"
)

// inPlaceTorchRuntime is the torch runtime of the namespace on the backend,
// with one restart of JobSet's in-place kind (KEP-467).
func inPlaceTorchRuntime(ctx context.Context, b backend, namespace string) {
	GinkgoHelper()
	rt := b.onBackend(runtimeCopy(namespace, "torch-distributed"))
	rt.Spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 1, RestartStrategy: jobsetv1alpha2.InPlaceRestart}
	createRuntime(ctx, rt)
}

var _ = Describe("TrainJobs restarted in place (failurePolicy.restartStrategy InPlaceRestart)", Label("trainjob"), func() {
	It("restart in place on the PodCliqueSet backend: the pods that ran keep their pod and node, the failed one is made anew, then Complete", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-pcs")
		inPlaceTorchRuntime(ctx, podCliqueSetBackend, ns)
		tj := torchTrainJob(ns, 3)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		pcs := &copsev1alpha1.PodCliqueSet{}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs)).To(Succeed())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(pcs.Spec.TrainingSpec.RestartStrategy).To(Equal(copsev1alpha1.TrainingRestartInPlace))

		first := podCliqueSetBackend.runningPods(ctx, ns, trainjob.NodeName, 3)
		failed := first[0]
		env.MakePodExit(ctx, &failed, "1")

		By("restarting the two pods that ran where they are, and making the failed one anew")
		Eventually(func(g Gomega) {
			got := &copsev1alpha1.PodCliqueSet{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			g.Expect(got.Status.ReplicaRecreations).To(ContainElement(And(HaveField("InPlace", BeTrue()), HaveField("BarrierLiftedAt", Not(BeNil())))))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		var now []corev1.Pod
		Eventually(func(g Gomega) {
			now = podCliqueSetBackend.pods(ctx, g, ns, trainjob.NodeName)
			g.Expect(now).To(HaveLen(3))
			for _, old := range first[1:] {
				g.Expect(now).To(ContainElement(And(HaveField("UID", old.UID), HaveField("Spec.NodeName", old.Spec.NodeName),
					HaveField("Status.Phase", corev1.PodRunning))), "pod %s kept where it ran", old.Name)
			}
			g.Expect(now).NotTo(ContainElement(HaveField("UID", failed.UID)))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		for _, p := range now {
			if p.UID == failed.UID {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.LastTerminationState.Terminated != nil {
					Expect(cs.LastTerminationState.Terminated.Reason).To(Equal(podstate.ReasonRestartingAllContainers), "pod %s", p.Name)
				}
			}
		}

		By("completing once the pods of the new attempt succeed")
		for _, p := range podCliqueSetBackend.runningPods(ctx, ns, trainjob.NodeName, 3) {
			env.MakePodExit(ctx, &p, "0")
		}
		expectComplete(ctx, tj)
		Eventually(func(g Gomega) int32 { return podCliqueSetBackend.restarts(ctx, g, tj) }).
			WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(BeEquivalentTo(1))
	})

	It("passes InPlaceRestart through to JobSet on the JobSet backend, whose webhook answers (its InPlaceRestart gate is off by default)", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace-jobset")
		inPlaceTorchRuntime(ctx, jobSetBackend, ns)
		tj := torchTrainJob(ns, 2)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobBackendRejectedReason))
		Expect(failed.Message).To(And(ContainSubstring("JobSet"), ContainSubstring("InPlaceRestart")))
	})
})
