package foundation_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/cluster"
)

// createGang creates a Workload with one gang template and its PodGroup,
// constrained to one NVLink domain, plus `size` pods that each ask for
// gpusPerPod GPUs and join the group.
func createGang(ctx context.Context, namespace, name string, size, gpusPerPod int32, podAnnotations map[string]string) []*corev1.Pod {
	GinkgoHelper()
	policy := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: size}}
	constraints := &schedulingv1beta1.PodGroupSchedulingConstraints{
		Topology: []schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelGPUClique}},
	}
	workload := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
			Name: "gang", SchedulingPolicy: policy, SchedulingConstraints: constraints,
		}}},
	}
	Expect(env.Client.Create(ctx, workload)).To(Succeed())
	podGroup := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: name, TemplateName: "gang"},
			SchedulingPolicy:      policy,
			SchedulingConstraints: constraints,
		},
	}
	Expect(env.Client.Create(ctx, podGroup)).To(Succeed())

	pods := make([]*corev1.Pod, 0, size)
	for i := range size {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, i), Annotations: podAnnotations},
			Spec: corev1.PodSpec{
				RestartPolicy:   corev1.RestartPolicyNever,
				SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)},
				Containers: []corev1.Container{{
					Name:  "train",
					Image: "example.com/train:1",
					Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(int64(gpusPerPod), resource.DecimalSI)},
					},
				}},
			},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		pods = append(pods, pod)
	}
	return pods
}

func getPod(ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	GinkgoHelper()
	got := &corev1.Pod{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
	return got
}

func nodeClique(ctx context.Context, nodeName string) string {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
	clique := node.Labels[cluster.LabelGPUClique]
	Expect(clique).NotTo(BeEmpty(), "node %s has no %s label", nodeName, cluster.LabelGPUClique)
	return clique
}

func terminatedExitCode(pod *corev1.Pod) (int32, bool) {
	if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Terminated == nil {
		return 0, false
	}
	return pod.Status.ContainerStatuses[0].State.Terminated.ExitCode, true
}

var _ = Describe("Gang scheduling on simulated GPU nodes", Label("foundation"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "gang")
	})

	It("binds a gang of 3 to one NVLink clique and runs it to Succeeded with exit code 0", func(ctx context.Context) {
		pods := createGang(ctx, namespace, "fits", 3, 2, map[string]string{
			cluster.AnnotationRunDuration: "2s",
			cluster.AnnotationExitCode:    "0",
		})

		cliques := map[string]bool{}
		for _, pod := range pods {
			Eventually(func(g Gomega) {
				got := getPod(ctx, pod)
				g.Expect(got.Spec.NodeName).NotTo(BeEmpty())
			}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
			cliques[nodeClique(ctx, getPod(ctx, pod).Spec.NodeName)] = true
		}
		Expect(cliques).To(HaveLen(1), "all pods of the gang must share one NVLink domain")

		for _, pod := range pods {
			Eventually(func(g Gomega) {
				got := getPod(ctx, pod)
				g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
				code, ok := terminatedExitCode(got)
				g.Expect(ok).To(BeTrue(), "container has no terminated state")
				g.Expect(code).To(Equal(int32(0)))
			}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
		}
	})

	It("ends a pod annotated with exit code 3 Failed with exit code 3", func(ctx context.Context) {
		pods := createGang(ctx, namespace, "crash", 1, 1, map[string]string{
			cluster.AnnotationRunDuration: "1s",
			cluster.AnnotationExitCode:    "3",
		})
		Eventually(func(g Gomega) {
			got := getPod(ctx, pods[0])
			g.Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
			code, ok := terminatedExitCode(got)
			g.Expect(ok).To(BeTrue(), "container has no terminated state")
			g.Expect(code).To(Equal(int32(3)))
		}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
	})

	It("leaves every pod of a gang that fits no single clique Pending", func(ctx context.Context) {
		gpusPerClique := int32(env.Topology.Shape.GPUs * env.Topology.NodesPerRack)
		// One pod more than a clique holds, each pod taking a whole node.
		size := int32(env.Topology.NodesPerRack + 1)
		pods := createGang(ctx, namespace, "too-big", size, int32(env.Topology.Shape.GPUs), nil)
		Expect(size * int32(env.Topology.Shape.GPUs)).To(BeNumerically(">", gpusPerClique))

		podGroupKey := client.ObjectKey{Namespace: namespace, Name: "too-big"}
		Eventually(func(g Gomega) {
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(env.Client.Get(ctx, podGroupKey, pg)).To(Succeed())
			cond := findCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
			g.Expect(cond).NotTo(BeNil(), "scheduler has not judged the gang yet")
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(schedulingv1beta1.PodGroupReasonUnschedulable))
		}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())

		// The scheduler has judged the gang; none of it may be bound, then or later.
		Consistently(func(g Gomega) {
			for _, pod := range pods {
				got := getPod(ctx, pod)
				g.Expect(got.Spec.NodeName).To(BeEmpty(), "pod %s was bound: a partial gang", got.Name)
				g.Expect(got.Status.Phase).To(Equal(corev1.PodPending))
			}
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})

func findCondition(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}
