package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// nestedInt is an integer field of an object, 0 when it has none.
func nestedInt(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, fields...)
	return v
}

// The suite's cluster serves the scheduler-plugins PodGroup
// (framework.Options.CoschedulingPodGroups) and not Volcano's.
var _ = Describe("A TrainJob whose runtime names Kubeflow's coscheduling or Volcano", Label("trainjob"), func() {
	It("gets, on the JobSet backend, the coscheduling PodGroup Kubeflow Trainer makes before its JobSet, and every pod the pod-group label", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "coscheduling")
		rt := runtimeCopy(ns, "torch-distributed")
		rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{
			ScheduleTimeoutSeconds: ptr.To[int32](100)}}
		createRuntime(ctx, rt)
		tj := torchTrainJob(ns, 2)
		perNode := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: perNode}
		Expect(env.Client.Create(ctx, tj)).To(Succeed()) // its pods run until told to exit
		created := getTrainJob(ctx, tj)

		By("creating the PodGroup scheduling.x-k8s.io/v1alpha1 named after the TrainJob, controlled by it: both pods, their requests, the timeout")
		podGroup := trainjob.NewSchedulerPodGroup(trainjob.CoschedulingPodGroupKind)
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), podGroup)
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(metav1.IsControlledBy(podGroup, created)).To(BeTrue(), "owners %v", podGroup.GetOwnerReferences())
		Expect(nestedInt(podGroup, "spec", "minMember")).To(BeEquivalentTo(2))
		Expect(nestedInt(podGroup, "spec", "scheduleTimeoutSeconds")).To(BeEquivalentTo(100))
		minResources, _, _ := unstructured.NestedStringMap(podGroup.Object, "spec", "minResources")
		Expect(minResources).To(HaveLen(2))
		for name, want := range map[string]string{"cpu": "3", "memory": "2Gi"} {
			got, err := resource.ParseQuantity(minResources[name])
			Expect(err).NotTo(HaveOccurred(), "minResources %v", minResources)
			Expect(got.Cmp(resource.MustParse(want))).To(BeZero(), "minResources %v: %s", minResources, name)
		}

		By("having made it before the JobSet, whose pods all carry scheduling.x-k8s.io/pod-group=<trainjob>")
		js := &jobsetv1alpha2.JobSet{}
		Eventually(func() (err error) { js, err = jobSetOf(ctx, tj); return err }).WithContext(ctx).WithTimeout(wait).Should(Succeed())
		Expect(podGroup.GetCreationTimestamp().Time).NotTo(BeTemporally(">", js.CreationTimestamp.Time), "the PodGroup must exist before the JobSet's pods")
		pods := jobSetBackend.runningPods(ctx, ns, trainjob.NodeName, 2)
		for _, p := range pods {
			Expect(p.Labels).To(HaveKeyWithValue(trainjob.CoschedulingPodGroupLabel, tj.Name), "pod %s", p.Name)
		}

		By("making the PodGroup again when it is deleted while the TrainJob runs")
		uid := podGroup.GetUID()
		Expect(env.Client.Delete(ctx, podGroup)).To(Succeed())
		Eventually(func(g Gomega) {
			again := trainjob.NewSchedulerPodGroup(trainjob.CoschedulingPodGroupKind)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), again)).To(Succeed())
			g.Expect(again.GetUID()).NotTo(Equal(uid))
			g.Expect(nestedInt(again, "spec", "minMember")).To(BeEquivalentTo(2))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("completing once its pods exit 0 (the kube-scheduler placed them; the PodGroup is for a coscheduling scheduler)")
		for i := range pods {
			env.MakePodExit(ctx, &pods[i], "0")
		}
		expectComplete(ctx, tj)
	})

	It("fails, on the JobSet backend, with TrainingRuntimeNotSupported naming spec.podGroupPolicy.volcano when the cluster does not serve Volcano's PodGroup, and makes no JobSet", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "volcano-unserved")
		rt := runtimeCopy(ns, "torch-distributed")
		rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}
		createRuntime(ctx, rt)
		tj := torchTrainJob(ns, 2)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobRuntimeNotSupportedReason))
		Expect(failed.Message).To(And(ContainSubstring("spec.podGroupPolicy.volcano"), ContainSubstring("scheduling.volcano.sh/v1beta1")))
		Consistently(func() error {
			_, err := jobSetOf(ctx, tj)
			return err
		}).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound), "a JobSet was made for a gang no scheduler would see")
	})
})
