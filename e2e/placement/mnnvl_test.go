package placement_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// mnnvlWait bounds the waits of the MNNVL specs: the operator, the
// simulated driver, the claim controller and the scheduler each react
// within seconds; a restart adds the old pods' grace period.
const mnnvlWait = 2 * time.Minute

// computeDomains are the ComputeDomains of a namespace by name.
func computeDomains(ctx context.Context, g Gomega, namespace string) map[string]*unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(nvidiadra.GroupVersionKind.GroupVersion().WithKind("ComputeDomainList"))
	g.Expect(env.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

// waitComputeDomains waits until the namespace's ComputeDomains are exactly
// those named, and returns them by name.
func waitComputeDomains(ctx context.Context, namespace string, names ...string) map[string]*unstructured.Unstructured {
	GinkgoHelper()
	var domains map[string]*unstructured.Unstructured
	Eventually(func(g Gomega) {
		domains = computeDomains(ctx, g, namespace)
		g.Expect(domains).To(HaveLen(len(names)))
		for _, name := range names {
			g.Expect(domains).To(HaveKey(name))
		}
	}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
	return domains
}

// gpuClique is a clique of pods that each take a whole simulated node's GPUs.
func gpuClique(name string, pods int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return framework.CliqueTemplate(name, pods, framework.PodSpec(int64(env.Topology.Shape.GPUs)))
}

// expectChannelOf waits until each pod's channel claim is allocated on its
// node and checks that it was made from domain's template: the pod names
// the template, and the claim carries the domain's UID (as the driver's
// template config does).
func expectChannelOf(ctx context.Context, pods []corev1.Pod, domain *unstructured.Unstructured) {
	GinkgoHelper()
	for _, p := range pods {
		Expect(p.Spec.ResourceClaims).To(ConsistOf(corev1.PodResourceClaim{Name: "mnnvl-claim", ResourceClaimTemplateName: ptr.To(domain.GetName())}),
			"pod %s", p.Name)
		Expect(p.Spec.Containers[0].Resources.Claims).To(ConsistOf(corev1.ResourceClaim{Name: "mnnvl-claim"}), "GPU container of pod %s", p.Name)
		pod, claim := allocatedChannel(ctx, p.Namespace, p.Name)
		Expect(claim.Status.Allocation.Devices.Results).To(ConsistOf(HaveField("Pool", pod.Spec.NodeName)),
			"the channel of pod %s is on its node", p.Name)
		Expect(nvidiadra.DomainOfClaim(claim)).To(Equal(string(domain.GetUID())), "claim %s of pod %s", claim.Name, p.Name)
	}
}

// expectNoChannel checks that pods carry no claim at all.
func expectNoChannel(pods []corev1.Pod) {
	GinkgoHelper()
	for _, p := range pods {
		Expect(p.Spec.ResourceClaims).To(BeEmpty(), "pod %s", p.Name)
		for _, c := range p.Spec.Containers {
			Expect(c.Resources.Claims).To(BeEmpty(), "container %s of pod %s", c.Name, p.Name)
		}
	}
}

// livePodsOf waits until n live pods match the labels and returns them.
func livePodsOf(ctx context.Context, namespace string, n int, match client.MatchingLabels) []corev1.Pod {
	GinkgoHelper()
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		list := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(namespace), match)).To(Succeed())
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && !framework.IsTerminal(&p) {
				pods = append(pods, p)
			}
		}
		g.Expect(pods).To(HaveLen(n))
	}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
	return pods
}

// expectNothingLeft waits until the namespace holds no ComputeDomain,
// channel template or claim.
func expectNothingLeft(ctx context.Context, namespace string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(computeDomains(ctx, g, namespace)).To(BeEmpty())
		templates := &resourcev1.ResourceClaimTemplateList{}
		g.Expect(env.Client.List(ctx, templates, client.InNamespace(namespace))).To(Succeed())
		g.Expect(templates.Items).To(BeEmpty())
		claims := &resourcev1.ResourceClaimList{}
		g.Expect(env.Client.List(ctx, claims, client.InNamespace(namespace))).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
}

// inMNNVLGroup opts a PodCliqueSet in to MNNVL: its GPU cliques join the
// group "fabric" (grove.io/mnnvl-group on its metadata), whose ComputeDomain
// in replica r is <pcs>-<r>-fabric.
func inMNNVLGroup(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs.Annotations = labels.Merge(pcs.Annotations, map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"})
	return pcs
}

func replicaPods(replica int, clique string, attempt int) client.MatchingLabels {
	return client.MatchingLabels{labels.ReplicaKey: fmt.Sprint(replica), labels.CliqueTemplateKey: clique, labels.AttemptKey: fmt.Sprint(attempt)}
}

var _ = Describe("MNNVL", Label("placement"), func() {
	It("gives each replica's GPU pods a ComputeDomain, replaces it on a Training restart and leaves nothing after deletion", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "mnnvl")
		pcs := inMNNVLGroup(framework.NewPodCliqueSet(namespace, "nvl", 2, gpuClique("gpu", 2), framework.CliqueTemplate("cpu", 1, framework.PodSpec(0))))
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("one ComputeDomain per replica, controlled by the PodCliqueSet, its channel template made by the driver")
		domains := waitComputeDomains(ctx, namespace, "nvl-0-fabric", "nvl-1-fabric")
		Eventually(func(g Gomega) {
			for name, cd := range domains {
				g.Expect(metav1.IsControlledBy(cd, pcs)).To(BeTrue(), "%s is controlled by the PodCliqueSet", name)
				g.Expect(cd.GetLabels()).To(HaveKeyWithValue(labels.AttemptKey, "0"))
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &resourcev1.ResourceClaimTemplate{})).To(Succeed())
			}
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

		By("every GPU pod's claim is allocated by the scheduler on its node, from its replica's domain; CPU pods have none")
		for replica := range 2 {
			expectChannelOf(ctx, livePodsOf(ctx, namespace, 2, replicaPods(replica, "gpu", 0)), domains[fmt.Sprintf("nvl-%d-fabric", replica)])
			expectNoChannel(livePodsOf(ctx, namespace, 1, replicaPods(replica, "cpu", 0)))
		}

		By("a failed GPU pod restarts replica 0: its ComputeDomain is replaced by a new one, replica 1's is kept")
		victim := livePodsOf(ctx, namespace, 2, replicaPods(0, "gpu", 0))[0]
		env.MakePodExit(ctx, &victim, "1")
		var renewed *unstructured.Unstructured
		Eventually(func(g Gomega) {
			now := computeDomains(ctx, g, namespace)
			g.Expect(now).To(HaveKey("nvl-0-fabric"))
			renewed = now["nvl-0-fabric"]
			g.Expect(renewed.GetUID()).NotTo(Equal(domains["nvl-0-fabric"].GetUID()), "replica 0's ComputeDomain is a new object")
			g.Expect(renewed.GetLabels()).To(HaveKeyWithValue(labels.AttemptKey, "1"))
			g.Expect(now["nvl-1-fabric"].GetUID()).To(Equal(domains["nvl-1-fabric"].GetUID()), "replica 1's ComputeDomain is untouched")
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
		expectChannelOf(ctx, livePodsOf(ctx, namespace, 2, replicaPods(0, "gpu", 1)), renewed)
		expectNoChannel(livePodsOf(ctx, namespace, 1, replicaPods(0, "cpu", 1)))

		By("deleting the PodCliqueSet leaves no ComputeDomain, template or claim")
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		expectNothingLeft(ctx, namespace)
	})

	It("makes one ComputeDomain per MNNVL group and honours the opt-out", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "mnnvl-groups")
		grouped, optedOut := gpuClique("grouped", 1), gpuClique("opted-out", 1)
		grouped.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric-b"}
		optedOut.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: copsev1alpha1.MNNVLGroupNone}
		pcs := framework.NewPodCliqueSet(namespace, "grp", 1, gpuClique("inherits", 1), grouped, optedOut)
		pcs.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric-a"}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		domains := waitComputeDomains(ctx, namespace, "grp-0-fabric-a", "grp-0-fabric-b")
		Expect(domains["grp-0-fabric-b"].GetLabels()).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, "fabric-b"))
		expectChannelOf(ctx, livePodsOf(ctx, namespace, 1, replicaPods(0, "inherits", 0)), domains["grp-0-fabric-a"])
		expectChannelOf(ctx, livePodsOf(ctx, namespace, 1, replicaPods(0, "grouped", 0)), domains["grp-0-fabric-b"])
		expectNoChannel(livePodsOf(ctx, namespace, 1, replicaPods(0, "opted-out", 0)))

		By("the PodCliqueSet's group is fixed at creation, also by an update of its metadata alone")
		changed := pcs.DeepCopy()
		changed.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "late"}
		Expect(env.Client.Patch(ctx, changed, client.MergeFrom(pcs))).To(MatchError(ContainSubstring(
			`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "late": field is immutable (was "fabric-a")`)))

		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		expectNothingLeft(ctx, namespace)
	})

	DescribeTable("gives a TrainJob's GPU pods a ComputeDomain when it names a group, and none otherwise",
		func(ctx context.Context, backend trainerv1alpha1.RuntimeBackend) {
			namespace := env.NewNamespace(ctx, "mnnvl-tj")
			Expect(env.Client.Create(ctx, framework.GPURuntime(namespace, backend))).To(Succeed())
			gpus := int64(env.Topology.Shape.GPUs)

			By("a TrainJob without the annotation, and a CPU TrainJob naming a group, are accepted and get neither a domain nor a claim")
			bare, cpu := framework.GPUTrainJob(namespace, "bare", 1, gpus), framework.GPUTrainJob(namespace, "cpu", 1, 0)
			cpu.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"}
			Expect(env.Client.Create(ctx, bare)).To(Succeed())
			Expect(env.Client.Create(ctx, cpu)).To(Succeed())
			Eventually(func(g Gomega) {
				for _, name := range []string{"bare", "cpu"} {
					for _, spec := range env.TrainJobPodSpecs(ctx, g, namespace, name, backend) {
						g.Expect(spec.ResourceClaims).To(BeEmpty(), "TrainJob %s", name)
					}
				}
				g.Expect(computeDomains(ctx, g, namespace)).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

			tj := framework.GPUTrainJob(namespace, "llm", 2, gpus)
			// On the PodCliqueSet backend the TrainJob's group reaches the
			// PodCliqueSet; on the JobSet backend there is one domain anyway.
			tj.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"}
			bad := tj.DeepCopy()
			bad.Name, bad.Annotations = "bad", map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "Fabric_1"}
			Expect(env.Client.Create(ctx, bad)).To(MatchError(ContainSubstring(
				`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "Fabric_1": must be "none" or a DNS-1123 label`)))
			Expect(env.Client.Create(ctx, tj)).To(Succeed())
			By("the TrainJob's group is fixed at creation")
			changed := tj.DeepCopy()
			changed.Annotations[copsev1alpha1.AnnotationMNNVLGroup] = "other"
			Expect(env.Client.Patch(ctx, changed, client.MergeFrom(tj))).To(MatchError(ContainSubstring(
				`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "other": field is immutable (was "fabric")`)))

			domainName, owner := "llm-mnnvl", client.Object(tj)
			match := client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: "llm"}
			if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
				owner = &copsev1alpha1.PodCliqueSet{}
				Eventually(func(g Gomega) {
					g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "llm"}, owner)).To(Succeed())
				}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
				domainName, match = "llm-0-fabric", client.MatchingLabels{labels.PartOfKey: "llm"}
			}
			domain := waitComputeDomains(ctx, namespace, domainName)[domainName]
			Expect(metav1.IsControlledBy(domain, owner)).To(BeTrue(), "ComputeDomain %s is controlled by %s %s", domainName,
				owner.GetObjectKind().GroupVersionKind().Kind, owner.GetName())
			expectChannelOf(ctx, livePodsOf(ctx, namespace, 2, match), domain)

			for _, done := range []*trainerv1alpha1.TrainJob{tj, bare, cpu} {
				Expect(env.Client.Delete(ctx, done, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
			}
			expectNothingLeft(ctx, namespace)
			expectFleetIdle(ctx)
		},
		Entry("on the JobSet backend", trainerv1alpha1.RuntimeBackendJobSet),
		Entry("on the PodCliqueSet backend", trainerv1alpha1.RuntimeBackendPodCliqueSet),
	)
})

// mnnvl.defaultGroup is copse's, not Grove's: the group every new GPU
// workload that names none gets, fixed at its creation.
var _ = Describe("MNNVL default group", Ordered, Label("placement"), func() {
	var namespace string
	BeforeAll(func(ctx context.Context) {
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.DefaultGroup = "nvl72" })).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.DefaultGroup = "" })).To(Succeed())
		})
		namespace = env.NewNamespace(ctx, "mnnvl-default")
		Expect(env.Client.Create(ctx, framework.GPURuntime(namespace, trainerv1alpha1.RuntimeBackendJobSet))).To(Succeed())
	})

	It("gives new PodCliqueSets and TrainJobs that name no group the default one, and keeps it when the option is turned off", func(ctx context.Context) {
		gpus := int64(env.Topology.Shape.GPUs)
		pcs := framework.NewPodCliqueSet(namespace, "auto", 1, gpuClique("gpu", 1))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		tj := framework.GPUTrainJob(namespace, "auto-tj", 1, gpus)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		own := framework.NewPodCliqueSet(namespace, "own", 1, gpuClique("gpu", 1))
		own.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: copsev1alpha1.MNNVLGroupNone}
		Expect(env.Client.Create(ctx, own)).To(Succeed())

		By("the webhook wrote the default group on the new objects, and kept the opt-out")
		Expect(pcs.Annotations).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, "nvl72"))
		Expect(tj.Annotations).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, "nvl72"))
		Expect(own.Annotations).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, copsev1alpha1.MNNVLGroupNone))
		domains := waitComputeDomains(ctx, namespace, "auto-0-nvl72", "auto-tj-mnnvl")
		expectChannelOf(ctx, livePodsOf(ctx, namespace, 1, client.MatchingLabels{labels.PartOfKey: "auto"}), domains["auto-0-nvl72"])
		expectChannelOf(ctx, livePodsOf(ctx, namespace, 1, client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: "auto-tj"}), domains["auto-tj-mnnvl"])
		expectNoChannel(livePodsOf(ctx, namespace, 1, client.MatchingLabels{labels.PartOfKey: "own"}))

		By("turned off, the option leaves the existing workloads' domains alone and gives new ones none")
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) { cfg.MNNVL.DefaultGroup = "" })).To(Succeed())
		later := framework.NewPodCliqueSet(namespace, "later", 1, gpuClique("gpu", 1))
		Expect(env.Client.Create(ctx, later)).To(Succeed())
		Expect(later.Annotations).NotTo(HaveKey(copsev1alpha1.AnnotationMNNVLGroup))
		expectNoChannel(livePodsOf(ctx, namespace, 1, client.MatchingLabels{labels.PartOfKey: "later"}))
		Consistently(func(g Gomega) {
			now := computeDomains(ctx, g, namespace)
			g.Expect(now).To(HaveLen(2))
			g.Expect(now["auto-0-nvl72"].GetUID()).To(Equal(domains["auto-0-nvl72"].GetUID()))
			g.Expect(now["auto-tj-mnnvl"].GetUID()).To(Equal(domains["auto-tj-mnnvl"].GetUID()))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		for _, done := range []client.Object{pcs, own, later, tj} {
			Expect(env.Client.Delete(ctx, done, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		}
		expectNothingLeft(ctx, namespace)
		expectFleetIdle(ctx)
	})
})

// Names a PodCliqueSet and a JobSet-backend TrainJob generate never meet
// in one namespace, even where they did before: a PodCliqueSet and a
// TrainJob of one name (both Workloads were called after it) and a TrainJob
// named as a PodCliqueSet's replica (both ComputeDomains were a-0).
var _ = Describe("Names across kinds", Label("placement"), func() {
	It("keeps a PodCliqueSet's and JobSet-backend TrainJobs' Workloads, PodGroups and ComputeDomains apart, and all of them run", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "names")
		rt := framework.GPURuntime(namespace, trainerv1alpha1.RuntimeBackendJobSet)
		rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}
		Expect(env.Client.Create(ctx, rt)).To(Succeed())

		By("a group that could take a TrainJob's ComputeDomain name is refused, on a PodCliqueSet and on a TrainJob")
		grouped := framework.NewPodCliqueSet(namespace, "b", 1, gpuClique("gpu", 1))
		grouped.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "rack-mnnvl"}
		Expect(env.Client.Create(ctx, grouped, client.DryRunAll)).To(MatchError(ContainSubstring(
			`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "rack-mnnvl": must not be "mnnvl" or end in "-mnnvl"`)))
		refused := gpuTrainJobNamed(namespace, "b")
		refused.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "mnnvl"}
		Expect(env.Client.Create(ctx, refused, client.DryRunAll)).To(MatchError(ContainSubstring(
			`metadata.annotations[grove.io/mnnvl-group]: Invalid value: "mnnvl": must not be "mnnvl" or end in "-mnnvl"`)))
		long := gpuTrainJobNamed(namespace, "t"+strings.Repeat("x", 57))
		Expect(env.Client.Create(ctx, long, client.DryRunAll)).To(MatchError(ContainSubstring(
			`its ComputeDomain "` + long.Name + `-mnnvl" (its MNNVL group on the runtime's JobSet backend gives GPU pods one) would be 64 characters, over the limit of 63`)))

		By("PodCliqueSet a first: its Workload a, its gang a-0, its replica's ComputeDomain a-0-fabric")
		pcs := inMNNVLGroup(framework.NewPodCliqueSet(namespace, "a", 1, gpuClique("gpu", 1)))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		waitComputeDomains(ctx, namespace, "a-0-fabric")

		By("then TrainJobs a and a-0 on the JobSet backend, gang-scheduled, with GPUs")
		sameName, replicaName := gpuTrainJobNamed(namespace, "a"), gpuTrainJobNamed(namespace, "a-0")
		Expect(env.Client.Create(ctx, sameName)).To(Succeed())
		Expect(env.Client.Create(ctx, replicaName)).To(Succeed())

		domains := waitComputeDomains(ctx, namespace, "a-0-fabric", "a-mnnvl", "a-0-mnnvl")
		owners := map[string]client.Object{"a-0-fabric": pcs, "a-mnnvl": sameName, "a-0-mnnvl": replicaName}
		for name, owner := range owners {
			current := owner.DeepCopyObject().(client.Object)
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(owner), current)).To(Succeed())
			Expect(metav1.IsControlledBy(domains[name], current)).To(BeTrue(), "ComputeDomain %s is controlled by %s", name, owner.GetName())
		}

		By("one Workload each, controlled by its own object, and the gangs' PodGroups")
		Eventually(func(g Gomega) {
			for name, kind := range map[string]string{"a": "PodCliqueSet", "a.trainjob": "TrainJob", "a-0.trainjob": "TrainJob"} {
				workload := &schedulingv1beta1.Workload{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, workload)).To(Succeed(), "Workload %s", name)
				g.Expect(workload.Spec.ControllerRef).To(HaveValue(HaveField("Kind", kind)), "Workload %s", name)
			}
			for _, name := range []string{"a-0", "a-trainer", "a-0-trainer"} {
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &schedulingv1beta1.PodGroup{})).To(Succeed(), "PodGroup %s", name)
			}
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

		By("all three run, each pod's channel from its own ComputeDomain")
		for _, w := range []struct {
			domain string
			match  client.MatchingLabels
		}{
			{"a-0-fabric", client.MatchingLabels{labels.PartOfKey: "a"}},
			{"a-mnnvl", client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: "a"}},
			{"a-0-mnnvl", client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: "a-0"}},
		} {
			expectChannelOf(ctx, livePodsOf(ctx, namespace, 1, w.match), domains[w.domain])
			Eventually(func(g Gomega) {
				list := &corev1.PodList{}
				g.Expect(env.Client.List(ctx, list, client.InNamespace(namespace), w.match)).To(Succeed())
				g.Expect(list.Items).To(ContainElement(HaveField("Status.Phase", corev1.PodRunning)), "pods of %v", w.match)
			}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
		}
		for _, tj := range []*trainerv1alpha1.TrainJob{sameName, replicaName} {
			got := &trainerv1alpha1.TrainJob{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			Expect(meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobFailed)).To(BeNil(), "TrainJob %s", tj.Name)
		}

		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		for _, tj := range []*trainerv1alpha1.TrainJob{sameName, replicaName} {
			Expect(env.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		}
		expectNothingLeft(ctx, namespace)
	})
})

// gpuTrainJobNamed is a TrainJob on the runtime "gpu" of one trainer node
// taking a whole simulated node's GPUs, in the MNNVL group "fabric".
func gpuTrainJobNamed(namespace, name string) *trainerv1alpha1.TrainJob {
	tj := framework.GPUTrainJob(namespace, name, 1, int64(env.Topology.Shape.GPUs))
	tj.Annotations = map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"}
	return tj
}
