package placement_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
	"github.com/copse-dev/copse/e2e/framework"
)

// draWait bounds waits on the driver, the claim controller and the
// scheduler, each of which reacts within seconds.
const draWait = time.Minute

func newComputeDomain(namespace, name, template string) *unstructured.Unstructured {
	cd := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"channel": map[string]any{"resourceClaimTemplate": map[string]any{"name": template}}},
	}}
	cd.SetGroupVersionKind(nvidiadra.GroupVersionKind)
	cd.SetNamespace(namespace)
	cd.SetName(name)
	return cd
}

func getComputeDomain(ctx context.Context, g Gomega, namespace, name string) nvidiadra.ComputeDomain {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(nvidiadra.GroupVersionKind)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)).To(Succeed())
	cd, err := nvidiadra.FromUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	return cd
}

// channelPod asks for gpus GPUs and a channel claim from template, as copse's
// MNNVL injection and NVIDIA's examples write it.
func channelPod(namespace, name, template string, gpus int64) *corev1.Pod {
	spec := framework.PodSpec(gpus)
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "mnnvl-claim", ResourceClaimTemplateName: ptr.To(template)}}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "mnnvl-claim"}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// allocatedChannel waits until pod is bound and its channel claim is
// allocated and reserved for it, and returns the claim.
func allocatedChannel(ctx context.Context, namespace, name string) (*corev1.Pod, *resourcev1.ResourceClaim) {
	pod, claim := &corev1.Pod{}, &resourcev1.ResourceClaim{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)).To(Succeed())
		g.Expect(pod.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", name)
		g.Expect(pod.Status.ResourceClaimStatuses).To(HaveLen(1))
		claimName := pod.Status.ResourceClaimStatuses[0].ResourceClaimName
		g.Expect(claimName).NotTo(BeNil())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *claimName}, claim)).To(Succeed())
		g.Expect(claim.Status.Allocation).NotTo(BeNil(), "claim %s is not allocated", *claimName)
		g.Expect(claim.Status.ReservedFor).To(ContainElement(HaveField("UID", pod.UID)))
	}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())
	return pod, claim
}

var _ = Describe("Simulated NVIDIA DRA driver", Label("placement"), func() {
	It("prepares a ComputeDomain, lets the scheduler allocate its channels, reports the nodes and cleans up on deletion", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "dra")
		Expect(env.Client.Create(ctx, newComputeDomain(namespace, "domain", "domain-channel"))).To(Succeed())

		By("the driver adds its finalizer, creates the channel template it controls and reports Ready")
		template := &resourcev1.ResourceClaimTemplate{}
		Eventually(func(g Gomega) {
			cd := getComputeDomain(ctx, g, namespace, "domain")
			g.Expect(cd.Finalizers).To(ContainElement(nvidiadra.Finalizer))
			g.Expect(cd.Status.Status).To(Equal(nvidiadra.StatusReady))
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "domain-channel"}, template)).To(Succeed())
			g.Expect(metav1.IsControlledBy(template, &metav1.ObjectMeta{UID: cd.UID})).To(BeTrue())
		}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())
		request := template.Spec.Spec.Devices.Requests[0].Exactly
		Expect(request.DeviceClassName).To(Equal(nvidiadra.ChannelDeviceClass))
		Expect(request.AllocationMode).To(Equal(resourcev1.DeviceAllocationModeExactCount))
		Expect(request.Count).To(BeEquivalentTo(1))

		By("the API server keeps the spec immutable")
		cd := &unstructured.Unstructured{}
		cd.SetGroupVersionKind(nvidiadra.GroupVersionKind)
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "domain"}, cd)).To(Succeed())
		Expect(unstructured.SetNestedField(cd.Object, int64(2), "spec", "numNodes")).To(Succeed())
		err := env.Client.Update(ctx, cd)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "updating spec.numNodes: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec is immutable"))

		By("two whole-node GPU pods with a channel claim each are scheduled on two nodes, each claim allocated there")
		nodeOfPod := map[string]string{}
		for _, name := range []string{"worker-0", "worker-1"} {
			Expect(env.Client.Create(ctx, channelPod(namespace, name, "domain-channel", int64(env.Topology.Shape.GPUs)))).To(Succeed())
		}
		for _, name := range []string{"worker-0", "worker-1"} {
			pod, claim := allocatedChannel(ctx, namespace, name)
			results := claim.Status.Allocation.Devices.Results
			Expect(results).To(HaveLen(1))
			Expect(results[0].Driver).To(Equal(nvidiadra.DriverName))
			Expect(results[0].Pool).To(Equal(pod.Spec.NodeName), "the channel must be on the pod's node")
			Expect(results[0].Request).To(Equal(nvidiadra.ChannelRequest))
			nodeOfPod[name] = pod.Spec.NodeName
		}
		Expect(nodeOfPod["worker-0"]).NotTo(Equal(nodeOfPod["worker-1"]), "each pod takes every GPU of its node")

		By("the domain's status lists both nodes with their clique and address")
		Eventually(func(g Gomega) {
			status := getComputeDomain(ctx, g, namespace, "domain").Status
			g.Expect(status.Status).To(Equal(nvidiadra.StatusReady))
			g.Expect(status.Nodes).To(HaveLen(2))
			for _, n := range status.Nodes {
				g.Expect(n.Name).To(BeElementOf(nodeOfPod["worker-0"], nodeOfPod["worker-1"]))
				node := &corev1.Node{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node)).To(Succeed())
				g.Expect(n.CliqueID).To(Equal(node.Labels[cluster.LabelGPUClique]))
				g.Expect(n.IPAddress).To(Equal(nvidiadra.NodeInfoOf(node).IPAddress))
				g.Expect(n.Status).To(Equal(nvidiadra.StatusReady))
			}
		}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())

		By("deleting the domain deletes its template, then the domain")
		Expect(env.Client.Delete(ctx, newComputeDomain(namespace, "domain", ""))).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "domain-channel"}, &resourcev1.ResourceClaimTemplate{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "template: %v", err)
			gone := &unstructured.Unstructured{}
			gone.SetGroupVersionKind(nvidiadra.GroupVersionKind)
			err = env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "domain"}, gone)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ComputeDomain: %v", err)
		}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())
		Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(namespace))).To(Succeed())
	})

	It("gives several single-GPU pods of one domain distinct channels on one node", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "dra-share")
		Expect(env.Client.Create(ctx, newComputeDomain(namespace, "domain", "domain-channel"))).To(Succeed())
		node := env.Topology.Placements()[0].NodeName()
		pods := env.Topology.Shape.GPUs
		for i := range pods {
			pod := channelPod(namespace, fmt.Sprintf("rank-%d", i), "domain-channel", 1)
			pod.Spec.NodeSelector = map[string]string{cluster.LabelHostname: node}
			Expect(env.Client.Create(ctx, pod)).To(Succeed())
		}
		devices := map[string]bool{}
		for i := range pods {
			pod, claim := allocatedChannel(ctx, namespace, fmt.Sprintf("rank-%d", i))
			Expect(pod.Spec.NodeName).To(Equal(node))
			result := claim.Status.Allocation.Devices.Results[0]
			Expect(result.Pool).To(Equal(node))
			devices[result.Device] = true
		}
		Expect(devices).To(HaveLen(pods), "one channel per GPU of the node, each pod its own")
		Eventually(func(g Gomega) {
			status := getComputeDomain(ctx, g, namespace, "domain").Status
			g.Expect(status.Nodes).To(ConsistOf(HaveField("Name", node)))
		}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())
		Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(namespace))).To(Succeed())
		Expect(env.Client.Delete(ctx, newComputeDomain(namespace, "domain", ""))).To(Succeed())
	})

	It("publishes channels for a node added later and withdraws them when it is removed", func(ctx context.Context) {
		// A zone of its own, so that no other spec's domains see the node.
		names, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 9, Count: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(names).To(HaveLen(1))
		DeferCleanup(func(ctx context.Context) { _ = env.Cluster.RemoveNodes(ctx, names...) })

		// AddNodes returns once the slice exists.
		slice := &resourcev1.ResourceSlice{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: nvidiadra.SliceName(names[0])}, slice)).To(Succeed())
		Expect(*slice.Spec.NodeName).To(Equal(names[0]))
		Expect(slice.Spec.Devices).To(HaveLen(env.Topology.Shape.GPUs))
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: names[0]}, node)).To(Succeed())
		for _, d := range slice.Spec.Devices {
			Expect(*d.Attributes[nvidiadra.AttributeCliqueID].StringValue).To(Equal(node.Labels[cluster.LabelGPUClique]))
		}

		Expect(env.Cluster.RemoveNodes(ctx, names...)).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: nvidiadra.SliceName(names[0])}, &resourcev1.ResourceSlice{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "slice of a removed node: %v", err)
		}).WithContext(ctx).WithTimeout(draWait).Should(Succeed())
	})
})
