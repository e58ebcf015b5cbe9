package placement_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// holdFinalizer keeps an object in the API server after its deletion, so
// that the operator can be caught in the middle of deleting it.
const holdFinalizer = "e2e.copse.dev/hold"

// nvlinkDomain is the level of a binding keyed by the NVLink clique label.
const nvlinkDomain grovecorev1alpha1.TopologyDomain = "nvlink"

// The shapes users build from the parts the other files test one by one:
// MNNVL with packing, several replicas, scaling groups, objects deleted
// under copse and an operator crash in the middle of a restart. Every check
// reads the scheduler's and the driver's results: the pods' nodes and their
// labels, the claims' allocations, the ComputeDomains' UIDs and status.
var _ = Describe("Placement shapes", Label("placement"), func() {
	var (
		namespace string
		binding   string
	)

	BeforeEach(func(ctx context.Context) {
		namespace, binding = onIdleFleet(ctx, "shapes")
	})

	// A spec that failed with the operator down must not leave the next one
	// without an operator.
	AfterEach(func(ctx context.Context) {
		if ok, _ := env.Operator.Running(); !ok {
			Expect(env.Operator.Restart(ctx)).To(Succeed())
		}
	})

	It("packs a GPU clique into one NVLink clique and gives it one ComputeDomain spanning exactly its nodes", func(ctx context.Context) {
		// The binding names the NVLink clique label as a level of its own.
		levels := fleetLevels()
		nvlink := createBinding(ctx, namespace+"-nvlink", []grovecorev1alpha1.TopologyLevel{
			levels[0], levels[1], {Domain: nvlinkDomain, Key: cluster.LabelGPUClique}, levels[3],
		}).Name
		// 4 whole-node pods fill one clique (a rack of 4 nodes); left to
		// itself the scheduler spreads them over the least allocated nodes.
		gpu := gpuClique("gpu", 4)
		gpu.TopologyConstraint = packAt(nvlink, nvlinkDomain, "")
		pcs := inMNNVLGroup(framework.NewPodCliqueSet(namespace, "nvl", 1, gpu, framework.CliqueTemplate("cpu", 2, framework.PodSpec(0))))
		createPCS(ctx, pcs)

		domain := waitComputeDomains(ctx, namespace, "nvl-0-fabric")["nvl-0-fabric"]
		gpuPods := boundPods(ctx, namespace, pcs.Name, 4, client.MatchingLabels{labels.CliqueTemplateKey: "gpu"})
		By("every GPU pod's claim is allocated on its node, from the replica's domain")
		expectChannelOf(ctx, gpuPods, domain)
		By("the GPU pods share one NVLink clique")
		Expect(domainsOf(ctx, gpuPods, cluster.LabelGPUClique)).To(HaveLen(1), "the GPU clique is spread over NVLink cliques")
		By("the domain's status lists exactly the GPU pods' nodes")
		expectDomainNodes(ctx, namespace, "nvl-0-fabric", gpuPods)
		By("the CPU pods have no claim")
		expectNoChannel(boundPods(ctx, namespace, pcs.Name, 2, client.MatchingLabels{labels.CliqueTemplateKey: "cpu"}))
	})

	It("packs each replica in a rack of its own, each with its own ComputeDomain", func(ctx context.Context) {
		// 3 whole-node pods per replica: a rack of 4 nodes holds one replica.
		pcs := inMNNVLGroup(framework.NewPodCliqueSet(namespace, "two", 2, gpuClique("gpu", 3)))
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
		createPCS(ctx, pcs)

		domains := waitComputeDomains(ctx, namespace, "two-0-fabric", "two-1-fabric")
		Expect(domains["two-0-fabric"].GetUID()).NotTo(Equal(domains["two-1-fabric"].GetUID()))
		var racks []string
		for replica := range 2 {
			pods := boundPods(ctx, namespace, pcs.Name, 3, replicaPods(replica, "gpu", 0))
			rack := domainsOf(ctx, pods, cluster.LabelRack)
			Expect(rack).To(HaveLen(1), "replica %d is spread over racks", replica)
			racks = append(racks, rack[0])
			name := fmt.Sprintf("two-%d-fabric", replica)
			expectChannelOf(ctx, pods, domains[name])
			expectDomainNodes(ctx, namespace, name, pods)
		}
		Expect(racks[0]).NotTo(Equal(racks[1]), "both replicas in rack %s", racks[0])
	})

	It("gives the GPU pods of a scaling group's base and scaled replicas the claim of the group's ComputeDomain", func(ctx context.Context) {
		router := framework.CliqueTemplate("router", 1, framework.PodSpec(0))
		pcs := framework.NewPodCliqueSet(namespace, "sg", 1, router, gpuClique("worker", 2))
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
			Annotations: map[string]string{copsev1alpha1.AnnotationMNNVLGroup: "fabric"},
		}}
		createPCS(ctx, pcs)

		// The router takes no GPU and names no group: no other domain.
		domain := waitComputeDomains(ctx, namespace, "sg-0-fabric")["sg-0-fabric"]
		var all []corev1.Pod
		for j, gang := range []string{"sg-0", "sg-0-workers-1"} {
			pods := boundPods(ctx, namespace, pcs.Name, 2,
				client.MatchingLabels{labels.CliqueTemplateKey: "worker", labels.ScalingGroupReplicaKey: fmt.Sprint(j)})
			for _, p := range pods {
				Expect(*p.Spec.SchedulingGroup.PodGroupName).To(Equal(gang), "pod %s of group replica %d", p.Name, j)
				// Built by the PodCliqueScalingGroup controller.
				pclq := &copsev1alpha1.PodClique{}
				Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: metav1.GetControllerOf(&p).Name}, pclq)).To(Succeed())
				Expect(metav1.GetControllerOf(pclq)).To(HaveField("Kind", "PodCliqueScalingGroup"), "PodClique %s", pclq.Name)
				Expect(pclq.Annotations).To(HaveKeyWithValue(copsev1alpha1.AnnotationMNNVLGroup, "fabric"))
			}
			By(fmt.Sprintf("group replica %d (gang %s): the claim of the group's domain, allocated on each pod's node", j, gang))
			expectChannelOf(ctx, pods, domain)
			all = append(all, pods...)
		}
		expectDomainNodes(ctx, namespace, "sg-0-fabric", all)
		expectNoChannel(boundPods(ctx, namespace, pcs.Name, 1, client.MatchingLabels{labels.CliqueTemplateKey: "router"}))
	})

	It("recreates a running replica's ComputeDomain deleted from outside, under the same name, leaving its pods running", func(ctx context.Context) {
		pcs := inMNNVLGroup(framework.NewPodCliqueSet(namespace, "cd-gone", 1, gpuClique("gpu", 2)))
		createPCS(ctx, pcs)
		old := waitComputeDomains(ctx, namespace, "cd-gone-0-fabric")["cd-gone-0-fabric"]
		pods := boundPods(ctx, namespace, pcs.Name, 2)
		expectChannelOf(ctx, pods, old)

		By("deleting the ComputeDomain")
		Expect(env.Client.Delete(ctx, old)).To(Succeed())
		var renewed *unstructured.Unstructured
		Eventually(func(g Gomega) {
			renewed = computeDomains(ctx, g, namespace)["cd-gone-0-fabric"]
			g.Expect(renewed).NotTo(BeNil())
			g.Expect(renewed.GetUID()).NotTo(Equal(old.GetUID()), "the ComputeDomain is a new object")
			g.Expect(renewed.GetDeletionTimestamp()).To(BeNil())
			g.Expect(renewed.GetLabels()).To(HaveKeyWithValue(labels.AttemptKey, "0"), "the same run")
			g.Expect(metav1.IsControlledBy(renewed, env.GetPodCliqueSet(ctx, g, namespace, pcs.Name))).To(BeTrue())
			template := &resourcev1.ResourceClaimTemplate{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "cd-gone-0-fabric"}, template)).To(Succeed())
			g.Expect(metav1.IsControlledBy(template, renewed)).To(BeTrue(), "the channel template is the new domain's")
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

		By("the running pods are left alone")
		Consistently(func(g Gomega) {
			now := env.LivePods(ctx, g, namespace, pcs.Name)
			g.Expect(now).To(HaveLen(2))
			for _, p := range now {
				g.Expect(p.UID).To(BeElementOf(pods[0].UID, pods[1].UID), "pod %s is new", p.Name)
				g.Expect(framework.IsReady(&p)).To(BeTrue(), "pod %s", p.Name)
			}
			g.Expect(env.GetPodCliqueSet(ctx, g, namespace, pcs.Name).Status.ReplicaRecreations).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
		By("their claims stay those of the deleted domain; the new one lists no node until new pods claim its channels")
		expectChannelOf(ctx, pods, old)
		Expect(getComputeDomain(ctx, Default, namespace, "cd-gone-0-fabric").Status.Nodes).To(BeEmpty())
	})

	It("keeps a PodGroup deleted from outside until its pods are gone, then recreates it with the same topology key", func(ctx context.Context) {
		pcs := framework.NewPodCliqueSet(namespace, "pg-gone", 1, framework.CliqueTemplate("worker", 3, framework.PodSpec(4)))
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
		createPCS(ctx, pcs)
		pods := boundPods(ctx, namespace, pcs.Name, 3)
		old := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "pg-gone-0"}, old)).To(Succeed())

		By("deleting the PodGroup: Kubernetes' protection finalizer holds it while its pods run, and they keep running")
		Expect(env.Client.Delete(ctx, old)).To(Succeed())
		Consistently(func(g Gomega) {
			now := &schedulingv1beta1.PodGroup{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), now)).To(Succeed())
			g.Expect(now.UID).To(Equal(old.UID))
			g.Expect(now.DeletionTimestamp).NotTo(BeNil())
			live := env.LivePods(ctx, g, namespace, pcs.Name)
			g.Expect(live).To(HaveLen(3))
			for _, p := range live {
				g.Expect(p.UID).To(BeElementOf(pods[0].UID, pods[1].UID, pods[2].UID), "pod %s is new", p.Name)
				g.Expect(framework.IsReady(&p)).To(BeTrue(), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("deleting the pods too: a new PodGroup with the same key")
		Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(namespace))).To(Succeed())
		Eventually(func(g Gomega) {
			now := &schedulingv1beta1.PodGroup{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), now)).To(Succeed())
			g.Expect(now.UID).NotTo(Equal(old.UID), "the PodGroup is a new object")
			g.Expect(now.Spec.SchedulingConstraints).To(Equal(&schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelRack}}}))
		}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())
		// The clique was available once, so its new pods are placed one by
		// one rather than as a gang; their pod affinity to the gang keeps them
		// in one rack all the same.
		renewed := boundPods(ctx, namespace, pcs.Name, 3)
		for _, p := range renewed {
			Expect(p.UID).NotTo(BeElementOf(pods[0].UID, pods[1].UID, pods[2].UID), "pod %s is an old one", p.Name)
		}
		Expect(domainsOf(ctx, renewed, cluster.LabelRack)).To(HaveLen(1), "the new pods are spread over racks")
	})

	It("keeps a replacement pod of a running packed gang in the gang's domain", func(ctx context.Context) {
		// An Inference gang of 3 whole nodes in a rack of 4; the other racks
		// are empty, so a replacement placed by resources alone would most
		// likely land in another rack.
		pcs := framework.NewPodCliqueSet(namespace, "replaced", 1, framework.CliqueTemplate("worker", 3, framework.PodSpec(4)))
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
		createPCS(ctx, pcs)
		pods := boundPods(ctx, namespace, pcs.Name, 3)
		rack := domainsOf(ctx, pods, cluster.LabelRack)
		Expect(rack).To(HaveLen(1))

		for i := range 2 {
			By(fmt.Sprintf("deleting pod %s: its replacement joins the gang's rack (%d)", pods[i].Name, i+1))
			Expect(env.Client.Delete(ctx, &pods[i])).To(Succeed())
			var now []corev1.Pod
			Eventually(func(g Gomega) {
				now = boundPods(ctx, namespace, pcs.Name, 3)
				g.Expect(now).NotTo(ContainElement(HaveField("UID", pods[i].UID)))
			}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())
			Expect(domainsOf(ctx, now, cluster.LabelRack)).To(Equal(rack), "a replacement left the gang's rack")
		}
	})

	It("leaves one new ComputeDomain and completes when the operator is killed in the middle of a packed MNNVL Training restart", func(ctx context.Context) {
		// Attempt 0's workers exit 1 after 8s, attempt 1's exit 0: long
		// enough to read attempt 1's placement and claims while they run.
		pcs := inMNNVLGroup(rackPackedTraining(namespace, "crash", binding, 3))
		pcs.Spec.Template.Cliques[0].Annotations = map[string]string{
			cluster.AnnotationRunDuration: "8s", cluster.AnnotationExitCodesByAttempt: "1,0",
		}
		createPCS(ctx, pcs)
		old := waitComputeDomains(ctx, namespace, "crash-0-fabric")["crash-0-fabric"]
		setHold(ctx, old, true)
		DeferCleanup(func(ctx context.Context) { setHold(ctx, old, false) })

		By("attempt 0 fails: the restart is recorded and the old ComputeDomain is being deleted")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, namespace, pcs.Name)
			g.Expect(got.Status.RestartCount).To(Equal(int32(1)))
			cd := computeDomains(ctx, g, namespace)["crash-0-fabric"]
			g.Expect(cd).NotTo(BeNil())
			g.Expect(cd.GetUID()).To(Equal(old.GetUID()))
			g.Expect(cd.GetDeletionTimestamp()).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

		By("killing the operator, letting the old domain go while it is down")
		Expect(env.Operator.Kill()).To(Succeed())
		setHold(ctx, old, false)
		time.Sleep(2 * time.Second)
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("attempt 1 is packed in one rack with a new ComputeDomain, the only one")
		second := boundPods(ctx, namespace, pcs.Name, 3, client.MatchingLabels{labels.AttemptKey: "1"})
		Expect(domainsOf(ctx, second, cluster.LabelRack)).To(HaveLen(1), "attempt 1 is spread over racks")
		renewed := waitComputeDomains(ctx, namespace, "crash-0-fabric")["crash-0-fabric"]
		Expect(renewed.GetUID()).NotTo(Equal(old.GetUID()))
		Expect(renewed.GetLabels()).To(HaveKeyWithValue(labels.AttemptKey, "1"))
		expectChannelOf(ctx, second, renewed)

		By("no template or claim of the old domain is left")
		Eventually(func(g Gomega) {
			templates := &resourcev1.ResourceClaimTemplateList{}
			g.Expect(env.Client.List(ctx, templates, client.InNamespace(namespace))).To(Succeed())
			g.Expect(templates.Items).To(HaveLen(1))
			g.Expect(metav1.IsControlledBy(&templates.Items[0], renewed)).To(BeTrue(), "template %s", templates.Items[0].Name)
			claims := &resourcev1.ResourceClaimList{}
			g.Expect(env.Client.List(ctx, claims, client.InNamespace(namespace))).To(Succeed())
			for i := range claims.Items {
				g.Expect(nvidiadra.DomainOfClaim(&claims.Items[i])).To(Equal(string(renewed.GetUID())), "claim %s", claims.Items[i].Name)
			}
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())

		By("attempt 1 exits 0: the PodCliqueSet succeeds after one restart")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, namespace, pcs.Name)
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(got.Status.RestartCount).To(Equal(int32(1)))
			pods := env.Pods(ctx, g, namespace, pcs.Name, client.MatchingLabels{labels.AttemptKey: "1"})
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
	})
})

// expectDomainNodes waits until the ComputeDomain's status, which the
// driver fills from the allocated claims, lists exactly the nodes of pods.
func expectDomainNodes(ctx context.Context, namespace, name string, pods []corev1.Pod) {
	GinkgoHelper()
	var nodes []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	Eventually(func(g Gomega) {
		var listed []string
		for _, n := range getComputeDomain(ctx, g, namespace, name).Status.Nodes {
			listed = append(listed, n.Name)
		}
		g.Expect(listed).To(ConsistOf(nodes))
	}).WithContext(ctx).WithTimeout(mnnvlWait).Should(Succeed())
}

// setHold adds or removes holdFinalizer on a ComputeDomain.
func setHold(ctx context.Context, cd *unstructured.Unstructured, hold bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(cd.GroupVersionKind())
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(cd), now)
		gone := apierrors.IsNotFound(err) || (err == nil && now.GetUID() != cd.GetUID())
		if !hold && gone {
			return // nothing left to release
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gone).To(BeFalse(), "ComputeDomain %s was replaced", cd.GetName())
		patch := client.MergeFromWithOptions(now.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if hold {
			controllerutil.AddFinalizer(now, holdFinalizer)
		} else {
			controllerutil.RemoveFinalizer(now, holdFinalizer)
		}
		g.Expect(env.Client.Patch(ctx, now, patch)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}
