package inference_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// autoscalingWait bounds each wait for the operator or the HPA controller
// (which the local cluster runs every second).
const autoscalingWait = 2 * time.Minute

// The local cluster serves no metrics API, so kube-controller-manager's HPA
// controller rescales a target only when its count is outside the HPA's
// bounds (reconcileAutoscaler in k8s.io/kubernetes
// pkg/controller/podautoscaler/horizontal.go): these specs drive it through
// minReplicas, maxReplicas and kubectl scale.
var _ = Describe("Autoscaling through HorizontalPodAutoscalers", Label("inference"), Ordered, func() {
	const name = "hpa"
	var namespace string

	// Per replica: frontend (1 pod, autoscaled), router (1 pod, not
	// autoscaled), and the scaling group decode of one worker clique
	// (1 group replica, autoscaled).
	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "autoscaling")
		frontend := framework.CliqueTemplate("frontend", 1, framework.PodSpec(0))
		frontend.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 3}
		pcs := framework.NewPodCliqueSet(namespace, name, 2,
			frontend,
			framework.CliqueTemplate("router", 1, framework.PodSpec(0)),
			framework.CliqueTemplate("worker", 1, framework.PodSpec(0)))
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1),
			ScaleConfig: &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 3},
		}}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		env.ReadyPods(ctx, namespace, name, 6, autoscalingWait)
	})

	It("creates one HPA per autoscaling config and replica, which the HPA controller reads through the scale subresources", func(ctx context.Context) {
		pcs := env.GetPodCliqueSet(ctx, Default, namespace, name)
		want := map[string]string{
			"hpa-0-frontend": "PodClique", "hpa-1-frontend": "PodClique",
			"hpa-0-decode": "PodCliqueScalingGroup", "hpa-1-decode": "PodCliqueScalingGroup",
		}
		Eventually(func(g Gomega) {
			hpas := autoscalersOf(ctx, g, namespace, name)
			g.Expect(hpas).To(HaveLen(4))
			for _, hpa := range hpas {
				kind, ok := want[hpa.Name]
				g.Expect(ok).To(BeTrue(), "unexpected HPA %s", hpa.Name)
				g.Expect(hpa.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{
					APIVersion: "grove.io/v1alpha1", Kind: kind, Name: hpa.Name}))
				g.Expect(hpa.Spec.MinReplicas).To(Equal(ptr.To[int32](1)), hpa.Name)
				g.Expect(hpa.Spec.MaxReplicas).To(Equal(int32(3)), hpa.Name)
				g.Expect(metav1.IsControlledBy(&hpa, pcs)).To(BeTrue(), "%s is not controlled by the PodCliqueSet", hpa.Name)
				g.Expect(hpa.Labels).To(HaveKeyWithValue(labels.AppNameKey, hpa.Name))
				g.Expect(hpa.Labels).To(HaveKeyWithValue(labels.ReplicaKey, hpa.Name[len("hpa-"):len("hpa-0")]))

				// The HPA controller read the target's scale subresource,
				// and got as far as the metrics with its selector: only the
				// missing metrics API stops it.
				g.Expect(hpa.Status.CurrentReplicas).To(Equal(int32(1)), "%s status %+v", hpa.Name, hpa.Status)
				able := hpaCondition(&hpa, autoscalingv2.AbleToScale)
				g.Expect(able).NotTo(BeNil(), "%s has no AbleToScale condition yet", hpa.Name)
				g.Expect(able.Status).To(Equal(corev1.ConditionTrue), "%s: %s", hpa.Name, able.Message)
				g.Expect(able.Message).To(ContainSubstring("get the target's current scale"))
				active := hpaCondition(&hpa, autoscalingv2.ScalingActive)
				g.Expect(active).NotTo(BeNil(), "%s has no ScalingActive condition yet", hpa.Name)
				g.Expect(active.Reason).To(Equal("FailedGetResourceMetric"), "%s: %s", hpa.Name, active.Message)
			}
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())

		// The selectors the scale subresources publish select each target's pods.
		for replica := range 2 {
			pclq := &copsev1alpha1.PodClique{}
			Expect(env.Client.Get(ctx, key(namespace, fmt.Sprintf("hpa-%d-frontend", replica)), pclq)).To(Succeed())
			Expect(podsSelectedBy(ctx, namespace, ptr.Deref(pclq.Status.Selector, ""))).To(HaveLen(1))
			pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
			Expect(env.Client.Get(ctx, key(namespace, fmt.Sprintf("hpa-%d-decode", replica)), pcsg)).To(Succeed())
			Expect(podsSelectedBy(ctx, namespace, ptr.Deref(pcsg.Status.Selector, ""))).To(HaveLen(1))
		}
	})

	It("updates the HPAs with the template's bounds, and the HPA controller scales targets up to a raised minReplicas", func(ctx context.Context) {
		updateTemplate(ctx, namespace, name, func(t *grovecorev1alpha1.PodCliqueSetTemplateSpec) {
			t.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 4}
			t.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 4}
		})
		Eventually(func(g Gomega) {
			hpas := autoscalersOf(ctx, g, namespace, name)
			g.Expect(hpas).To(HaveLen(4))
			for _, hpa := range hpas {
				g.Expect(hpa.Spec.MinReplicas).To(Equal(ptr.To[int32](2)), hpa.Name)
				g.Expect(hpa.Spec.MaxReplicas).To(Equal(int32(4)), hpa.Name)
			}
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())

		Eventually(func(g Gomega) {
			for replica := range 2 {
				frontend := fmt.Sprintf("hpa-%d-frontend", replica)
				g.Expect(cliqueReplicas(ctx, g, namespace, frontend)).To(Equal(int32(2)))
				g.Expect(readyPodIndices(ctx, g, namespace, frontend)).To(Equal([]int{0, 1}))
				decode := fmt.Sprintf("hpa-%d-decode", replica)
				g.Expect(groupReplicas(ctx, g, namespace, decode)).To(Equal(int32(2)))
				g.Expect(readyPodIndices(ctx, g, namespace, decode+"-1-worker")).To(Equal([]int{0}))
				g.Expect(rescaledBecause(ctx, g, namespace, frontend)).To(ContainElement(ContainSubstring("below Spec.MinReplicas")))
				g.Expect(rescaledBecause(ctx, g, namespace, decode)).To(ContainElement(ContainSubstring("below Spec.MinReplicas")))
			}
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())

		// The template's counts are unchanged: the scale subresource owns them.
		template := env.GetPodCliqueSet(ctx, Default, namespace, name).Spec.Template
		Expect(template.Cliques[0].Spec.Replicas).To(Equal(int32(1)))
		Expect(template.PodCliqueScalingGroupConfigs[0].Replicas).To(Equal(ptr.To[int32](1)))
	})

	It("brings a count scaled above maxReplicas back to maxReplicas, removing the highest indices", func(ctx context.Context) {
		kubectlScale(ctx, namespace, "podclique/hpa-0-frontend", 6)
		kubectlScale(ctx, namespace, "podcliquescalinggroup/hpa-0-decode", 5)
		Eventually(func(g Gomega) {
			g.Expect(rescaledBecause(ctx, g, namespace, "hpa-0-frontend")).To(ContainElement(And(
				ContainSubstring("New size: 4"), ContainSubstring("above Spec.MaxReplicas"))))
			g.Expect(rescaledBecause(ctx, g, namespace, "hpa-0-decode")).To(ContainElement(And(
				ContainSubstring("New size: 4"), ContainSubstring("above Spec.MaxReplicas"))))
			g.Expect(cliqueReplicas(ctx, g, namespace, "hpa-0-frontend")).To(Equal(int32(4)))
			g.Expect(readyPodIndices(ctx, g, namespace, "hpa-0-frontend")).To(Equal([]int{0, 1, 2, 3}))
			g.Expect(groupReplicas(ctx, g, namespace, "hpa-0-decode")).To(Equal(int32(4)))
			g.Expect(groupReplicaIndices(ctx, g, namespace, "hpa-0-decode")).To(Equal([]int{0, 1, 2, 3}))
			for j := range 4 {
				g.Expect(readyPodIndices(ctx, g, namespace, fmt.Sprintf("hpa-0-decode-%d-worker", j))).To(Equal([]int{0}))
			}
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
	})

	It("honours kubectl scale of a clique without autoscaler, removing the highest indices on scale-in", func(ctx context.Context) {
		kubectlScale(ctx, namespace, "podclique/hpa-0-router", 3)
		Eventually(func(g Gomega) {
			g.Expect(readyPodIndices(ctx, g, namespace, "hpa-0-router")).To(Equal([]int{0, 1, 2}))
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
		kubectlScale(ctx, namespace, "podclique/hpa-0-router", 1)
		Eventually(func(g Gomega) {
			g.Expect(livePodIndices(ctx, g, namespace, "hpa-0-router")).To(Equal([]int{0}))
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
	})

	It("keeps a count scaled within the bounds across a template change of something else", func(ctx context.Context) {
		kubectlScale(ctx, namespace, "podclique/hpa-1-frontend", 3)
		Eventually(func(g Gomega) {
			g.Expect(readyPodIndices(ctx, g, namespace, "hpa-1-frontend")).To(Equal([]int{0, 1, 2}))
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
		updateTemplate(ctx, namespace, name, func(t *grovecorev1alpha1.PodCliqueSetTemplateSpec) {
			t.Cliques[1].Spec.Replicas = 2 // router's
		})
		// Several HPA controller passes (one a second) and operator passes.
		Consistently(func(g Gomega) {
			g.Expect(cliqueReplicas(ctx, g, namespace, "hpa-1-frontend")).To(Equal(int32(3)))
			g.Expect(livePodIndices(ctx, g, namespace, "hpa-1-frontend")).To(Equal([]int{0, 1, 2}))
		}).WithContext(ctx).WithTimeout(8 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("recreates an HPA deleted from outside", func(ctx context.Context) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		Expect(env.Client.Get(ctx, key(namespace, "hpa-0-decode"), hpa)).To(Succeed())
		uid := hpa.UID
		Expect(env.Client.Delete(ctx, hpa)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &autoscalingv2.HorizontalPodAutoscaler{}
			g.Expect(env.Client.Get(ctx, key(namespace, "hpa-0-decode"), again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(uid))
			g.Expect(again.Spec.ScaleTargetRef.Kind).To(Equal("PodCliqueScalingGroup"))
			g.Expect(again.Spec.MinReplicas).To(Equal(ptr.To[int32](2)))
			g.Expect(again.Spec.MaxReplicas).To(Equal(int32(4)))
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
	})

	It("deletes the HPAs of an autoscaling config removed from the template", func(ctx context.Context) {
		updateTemplate(ctx, namespace, name, func(t *grovecorev1alpha1.PodCliqueSetTemplateSpec) {
			t.Cliques[0].Spec.ScaleConfig = nil
		})
		Eventually(func(g Gomega) {
			g.Expect(autoscalerNames(autoscalersOf(ctx, g, namespace, name))).To(Equal([]string{"hpa-0-decode", "hpa-1-decode"}))
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
		updateTemplate(ctx, namespace, name, func(t *grovecorev1alpha1.PodCliqueSetTemplateSpec) {
			t.PodCliqueScalingGroupConfigs[0].ScaleConfig = nil
		})
		Eventually(func(g Gomega) {
			g.Expect(autoscalersOf(ctx, g, namespace, name)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(autoscalingWait).Should(Succeed())
	})
})

// autoscalersOf lists the HPAs copse made for a PodCliqueSet, by label.
func autoscalersOf(ctx context.Context, g Gomega, namespace, pcs string) []autoscalingv2.HorizontalPodAutoscaler {
	var list autoscalingv2.HorizontalPodAutoscalerList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{labels.PartOfKey: pcs, labels.ComponentKey: labels.ComponentAutoscaler})).To(Succeed())
	return list.Items
}

func autoscalerNames(hpas []autoscalingv2.HorizontalPodAutoscaler) []string {
	var out []string
	for _, hpa := range hpas {
		out = append(out, hpa.Name)
	}
	slices.Sort(out)
	return out
}

func hpaCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == t {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
}

// rescaledBecause are the notes of the HPA controller's SuccessfulRescale
// events on one HPA ("New size: N; reason: ...").
func rescaledBecause(ctx context.Context, g Gomega, namespace, hpa string) []string {
	var out []string
	for _, ev := range env.EventsWithReason(ctx, g, namespace, "SuccessfulRescale") {
		if ev.Regarding.Kind == "HorizontalPodAutoscaler" && ev.Regarding.Name == hpa {
			out = append(out, ev.Note)
		}
	}
	return out
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// updateTemplate changes a PodCliqueSet's template, retrying on conflicts.
func updateTemplate(ctx context.Context, namespace, name string, change func(*grovecorev1alpha1.PodCliqueSetTemplateSpec)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
		change(&pcs.Spec.Template)
		g.Expect(env.Client.Update(ctx, pcs)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// kubectlScale runs the cluster's kubectl scale, which writes the scale
// subresource.
func kubectlScale(ctx context.Context, namespace, target string, replicas int) {
	GinkgoHelper()
	out, err := env.Kubectl(ctx, "scale", "-n", namespace, target, "--replicas="+strconv.Itoa(replicas))
	Expect(err).NotTo(HaveOccurred())
	Expect(out).To(ContainSubstring("scaled"))
}

func cliqueReplicas(ctx context.Context, g Gomega, namespace, pclq string) int32 {
	obj := &copsev1alpha1.PodClique{}
	g.Expect(env.Client.Get(ctx, key(namespace, pclq), obj)).To(Succeed())
	return obj.Spec.Replicas
}

func groupReplicas(ctx context.Context, g Gomega, namespace, pcsg string) int32 {
	obj := &copsev1alpha1.PodCliqueScalingGroup{}
	g.Expect(env.Client.Get(ctx, key(namespace, pcsg), obj)).To(Succeed())
	return obj.Spec.Replicas
}

// groupReplicaIndices are the group replica indices of a scaling group's
// live PodCliques, sorted.
func groupReplicaIndices(ctx context.Context, g Gomega, namespace, pcsg string) []int {
	var list copsev1alpha1.PodCliqueList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{labels.ScalingGroupKey: pcsg})).To(Succeed())
	var out []int
	for _, pclq := range list.Items {
		if pclq.DeletionTimestamp.IsZero() {
			j, ok := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
			g.Expect(ok).To(BeTrue(), "PodClique %s has no group replica index", pclq.Name)
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return out
}

// livePodIndices are the pod indices of a PodClique's pods not being
// deleted, sorted.
func livePodIndices(ctx context.Context, g Gomega, namespace, pclq string) []int {
	return podIndices(ctx, g, namespace, pclq, func(*corev1.Pod) bool { return true })
}

// readyPodIndices are livePodIndices, failing g unless every such pod is Ready.
func readyPodIndices(ctx context.Context, g Gomega, namespace, pclq string) []int {
	return podIndices(ctx, g, namespace, pclq, func(p *corev1.Pod) bool {
		g.Expect(framework.IsReady(p)).To(BeTrue(), "pod %s not Ready", p.Name)
		return true
	})
}

func podIndices(ctx context.Context, g Gomega, namespace, pclq string, keep func(*corev1.Pod) bool) []int {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{labels.PodCliqueKey: pclq})).To(Succeed())
	var out []int
	for i := range pods.Items {
		p := &pods.Items[i]
		if !p.DeletionTimestamp.IsZero() || !keep(p) {
			continue
		}
		index, ok := labels.Index(p.Labels, labels.PodIndexKey)
		g.Expect(ok).To(BeTrue(), "pod %s has no index", p.Name)
		out = append(out, index)
	}
	slices.Sort(out)
	return out
}

// podsSelectedBy lists the pods a scale subresource's selector selects.
func podsSelectedBy(ctx context.Context, namespace, selector string) []corev1.Pod {
	GinkgoHelper()
	Expect(strings.TrimSpace(selector)).NotTo(BeEmpty(), "no selector published")
	var pods corev1.PodList
	sel, err := metav1.ParseToLabelSelector(selector)
	Expect(err).NotTo(HaveOccurred())
	ls, err := metav1.LabelSelectorAsSelector(sel)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: ls})).To(Succeed())
	return pods.Items
}
