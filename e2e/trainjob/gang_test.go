package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// gangRuntime is Kubeflow's torch-distributed runtime as a TrainingRuntime
// of the namespace, with Workload-API gang scheduling (KEP-3015).
func gangRuntime(namespace string) *trainerv1alpha1.TrainingRuntime {
	rt := &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "torch-gang"},
		Spec:       *shipped["torch-distributed"].Spec.DeepCopy(),
	}
	rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}
	return rt
}

// gpuTrainJob asks for nodes trainer nodes of 4 GPUs each, a whole simulated
// node each.
func gpuTrainJob(namespace, name string, nodes int32) *trainerv1alpha1.TrainJob {
	gpus := corev1.ResourceList{"nvidia.com/gpu": resourceMust("4")}
	tj := &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "torch-gang", Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To(nodes),
				ResourcesPerNode: &corev1.ResourceRequirements{Requests: gpus, Limits: gpus}},
		},
	}
	withPods(tj, "node", simulate(3*time.Second, "0"))
	return tj
}

var _ = Describe("Workload-API gang scheduling of a TrainJob", Label("trainjob"), func() {
	It("creates the Workload and the trainer gang's PodGroup before any pod, and the scheduler places the gang whole", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "gang-fits")
		Expect(env.Client.Create(ctx, gangRuntime(ns))).To(Succeed())
		tj := gpuTrainJob(ns, "fits", 4)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		created := getTrainJob(ctx, tj)

		By("creating the Workload <trainjob>.trainjob, controlled by the TrainJob, with a gang template of every trainer pod")
		workload := &schedulingv1beta1.Workload{}
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits.trainjob"}, workload)
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(metav1.IsControlledBy(workload, created)).To(BeTrue())
		Expect(workload.Spec.ControllerRef).To(HaveValue(HaveField("Kind", "TrainJob")))
		Expect(workload.Spec.PodGroupTemplates).To(ConsistOf(And(
			HaveField("Name", trainjob.TrainerGroup),
			HaveField("SchedulingPolicy.Gang", HaveValue(HaveField("MinCount", BeEquivalentTo(4)))))))

		By("creating the trainer PodGroup, owned by the TrainJob (controller) and the Workload")
		podGroup := &schedulingv1beta1.PodGroup{}
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits-trainer"}, podGroup)
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(metav1.IsControlledBy(podGroup, created)).To(BeTrue())
		Expect(podGroup.OwnerReferences).To(ContainElement(And(HaveField("Kind", "Workload"), HaveField("UID", workload.UID))))
		Expect(podGroup.Spec.SchedulingPolicy.Gang).To(HaveValue(HaveField("MinCount", BeEquivalentTo(4))))

		By("putting the JobSet's pods in the PodGroup, and the scheduler binding all four")
		js := &jobsetv1alpha2.JobSet{}
		Eventually(func() (err error) { js, err = jobSetOf(ctx, tj); return err }).WithContext(ctx).WithTimeout(wait).Should(Succeed())
		Expect(podGroup.CreationTimestamp.Time).NotTo(BeTemporally(">", js.CreationTimestamp.Time), "the PodGroup must exist before the JobSet's pods")
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, tj)
			g.Expect(pods).To(HaveLen(4))
			for _, p := range pods {
				g.Expect(p.Spec.SchedulingGroup).To(HaveValue(HaveField("PodGroupName", HaveValue(Equal("fits-trainer")))))
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s not bound", p.Name)
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("completing")
		Eventually(func() *metav1.Condition {
			return condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobComplete)
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).ShouldNot(BeNil())
	})
})
