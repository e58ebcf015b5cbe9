package inference_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// sharingWait bounds waits on the operator, the claim controller and the
// scheduler, each of which reacts within seconds.
const sharingWait = time.Minute

// absentDeviceClass is a DeviceClass no cluster has: claims of it are
// created and referenced but never allocated, which is all the hierarchy
// spec looks at (as Grove's own scenario does).
const absentDeviceClass = "absent.sharing.copse.dev"

func deviceClaimSpec(class string) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "device", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class},
	}}}}
}

func internalTemplate(name, class string) grovecorev1alpha1.ResourceClaimTemplateConfig {
	return grovecorev1alpha1.ResourceClaimTemplateConfig{Name: name, TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: deviceClaimSpec(class)}}
}

func claimTemplateObject(namespace, name, class string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: deviceClaimSpec(class)}}
}

func sharing(name string, scope grovecorev1alpha1.ResourceSharingScope) grovecorev1alpha1.ResourceSharingSpec {
	return grovecorev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
}

const (
	allReplicas = grovecorev1alpha1.ResourceSharingScopeAllReplicas
	perReplica  = grovecorev1alpha1.ResourceSharingScopePerReplica
)

// claimOwner is the kind and name of a claim's controller.
type claimOwner struct{ kind, name string }

// sharedClaims lists the claims copse made for a PodCliqueSet, by name
// (Grove's labels: managed-by, part-of, component resource-claim).
func sharedClaims(ctx context.Context, g Gomega, namespace, pcs string) map[string]resourcev1.ResourceClaim {
	var list resourcev1.ResourceClaimList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{
		labels.ManagedByKey: labels.ManagedByValue, labels.PartOfKey: pcs, labels.ComponentKey: labels.ComponentResourceClaim,
	})).To(Succeed())
	out := map[string]resourcev1.ResourceClaim{}
	for _, c := range list.Items {
		out[c.Name] = c
	}
	return out
}

// expectClaims waits until the PodCliqueSet's claims are exactly want, each
// controlled by the owner want names, and returns them.
func expectClaims(ctx context.Context, namespace, pcs string, want map[string]claimOwner) map[string]resourcev1.ResourceClaim {
	GinkgoHelper()
	var claims map[string]resourcev1.ResourceClaim
	Eventually(func(g Gomega) {
		claims = sharedClaims(ctx, g, namespace, pcs)
		names := make([]string, 0, len(claims))
		for name := range claims {
			names = append(names, name)
		}
		wantNames := make([]string, 0, len(want))
		for name := range want {
			wantNames = append(wantNames, name)
		}
		g.Expect(names).To(ConsistOf(wantNames))
		for name, owner := range want {
			c := claims[name]
			ref := metav1.GetControllerOf(&c)
			g.Expect(ref).NotTo(BeNil(), "claim %s has no controller", name)
			g.Expect(claimOwner{ref.Kind, ref.Name}).To(Equal(owner), "controller of claim %s", name)
			g.Expect(ptr.Deref(ref.BlockOwnerDeletion, false)).To(BeTrue(), "claim %s", name)
		}
	}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
	return claims
}

// podClaimNames are a pod's spec.resourceClaims, each checked to name its
// claim by resourceClaimName, and checked to be on every container.
func podClaimNames(g Gomega, pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.ResourceClaims {
		g.Expect(c.ResourceClaimName).To(HaveValue(Equal(c.Name)), "pod %s claim %s", pod.Name, c.Name)
		names = append(names, c.Name)
	}
	for _, container := range pod.Spec.Containers {
		var onContainer []string
		for _, c := range container.Resources.Claims {
			onContainer = append(onContainer, c.Name)
		}
		g.Expect(onContainer).To(Equal(names), "pod %s container %s", pod.Name, container.Name)
	}
	return names
}

// expectPodClaims waits until the PodCliqueSet has one live pod per key of
// want (PodClique and pod index) and each refers to exactly the claims
// listed, in that order.
func expectPodClaims(ctx context.Context, namespace, pcs string, want map[string][]string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pods := env.LivePods(ctx, g, namespace, pcs)
		got := map[string][]string{}
		for i := range pods {
			got[pods[i].Labels[labels.PodCliqueKey]+"/"+pods[i].Labels[labels.PodIndexKey]] = podClaimNames(g, &pods[i])
		}
		g.Expect(pods).To(HaveLen(len(want)))
		g.Expect(got).To(Equal(want))
	}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
}

// hierarchyShape is the live shape of the hierarchy spec's PodCliqueSet:
// per PodCliqueSet replica, the replicas of scaling group "sga" and the
// pods of standalone clique "solo".
type hierarchyShape []struct{ sga, solo int }

// claims are the claims the shape must have, with their owners, by Grove's
// naming and ownership.
func (s hierarchyShape) claims() map[string]claimOwner {
	pcs := claimOwner{"PodCliqueSet", "rs"}
	out := map[string]claimOwner{"rs-all-all-pods": pcs, "rs-all-group-all": pcs}
	for r, replica := range s {
		out[fmt.Sprintf("rs-%d-replica-ext", r)] = pcs
		out[fmt.Sprintf("rs-%d-solo-replica", r)] = pcs
		solo := claimOwner{"PodClique", fmt.Sprintf("rs-%d-solo", r)}
		out[solo.name+"-all-platform"] = solo
		for i := range replica.solo {
			out[fmt.Sprintf("%s-%d-solo-pod", solo.name, i)] = solo
		}
		group := claimOwner{"PodCliqueScalingGroup", fmt.Sprintf("rs-%d-sga", r)}
		out[group.name+"-all-sga-all"] = group
		out[group.name+"-all-sga-member"] = group
		for j := range replica.sga {
			out[fmt.Sprintf("%s-%d-sga-replica", group.name, j)] = group
			member := claimOwner{"PodClique", fmt.Sprintf("%s-%d-member", group.name, j)}
			out[member.name+"-all-member-all"] = member
		}
	}
	return out
}

// pods are the claims each pod of the shape refers to, by PodClique and
// pod index, in the order copse (as Grove) adds them: per level, the
// PodCliqueSet's, the scaling group's, the clique's; within a level the
// AllReplicas entries, then the PerReplica ones; filters applied.
func (s hierarchyShape) pods() map[string][]string {
	out := map[string][]string{}
	for r, replica := range s {
		solo := fmt.Sprintf("rs-%d-solo", r)
		for i := range replica.solo {
			out[solo+"/"+strconv.Itoa(i)] = []string{
				"rs-all-all-pods", fmt.Sprintf("rs-%d-replica-ext", r), fmt.Sprintf("rs-%d-solo-replica", r),
				solo + "-all-platform", fmt.Sprintf("%s-%d-solo-pod", solo, i),
			}
		}
		group := fmt.Sprintf("rs-%d-sga", r)
		for j := range replica.sga {
			member := fmt.Sprintf("%s-%d-member", group, j)
			out[member+"/0"] = []string{
				"rs-all-all-pods", "rs-all-group-all", fmt.Sprintf("rs-%d-replica-ext", r),
				group + "-all-sga-all", group + "-all-sga-member", fmt.Sprintf("%s-%d-sga-replica", group, j),
				member + "-all-member-all",
			}
		}
	}
	return out
}

// hierarchyPodCliqueSet has resourceSharing at every level with every
// filter, templates inside the PodCliqueSet, in its namespace and in
// another one:
//
//	PodCliqueSet  all-pods AllReplicas (no filter), replica-ext PerReplica
//	              (an object in the namespace), solo-replica PerReplica
//	              (filter: clique solo), group-all AllReplicas (filter:
//	              scaling group sga)
//	clique solo   solo-pod PerReplica, platform AllReplicas (an object in
//	              namespace platformNamespace)
//	group sga     sga-all AllReplicas, sga-replica PerReplica, sga-member
//	              AllReplicas (filter: clique member); clique member
//	clique member member-all AllReplicas
func hierarchyPodCliqueSet(namespace, platformNamespace string) *copsev1alpha1.PodCliqueSet {
	solo := framework.CliqueTemplate("solo", 1, framework.PodSpec(0))
	solo.ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{
		sharing("solo-pod", perReplica),
		{Name: "platform", Namespace: platformNamespace, Scope: allReplicas},
	}
	member := framework.CliqueTemplate("member", 1, framework.PodSpec(0))
	member.ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{sharing("member-all", allReplicas)}
	pcs := framework.NewPodCliqueSet(namespace, "rs", 1, solo, member)
	t := &pcs.Spec.Template
	for _, name := range []string{"all-pods", "solo-replica", "group-all", "solo-pod", "sga-all", "sga-replica", "sga-member", "member-all"} {
		t.ResourceClaimTemplates = append(t.ResourceClaimTemplates, internalTemplate(name, absentDeviceClass))
	}
	t.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: sharing("all-pods", allReplicas)},
		{ResourceSharingSpec: sharing("replica-ext", perReplica)},
		{ResourceSharingSpec: sharing("solo-replica", perReplica), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"solo"}}},
		{ResourceSharingSpec: sharing("group-all", allReplicas), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"sga"}}},
	}
	t.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "sga", CliqueNames: []string{"member"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
		ResourceSharing: []grovecorev1alpha1.PCSGResourceSharingSpec{
			{ResourceSharingSpec: sharing("sga-all", allReplicas)},
			{ResourceSharingSpec: sharing("sga-replica", perReplica)},
			{ResourceSharingSpec: sharing("sga-member", allReplicas), Filter: &grovecorev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"member"}}},
		},
	}}
	return pcs
}

func scale(ctx context.Context, namespace, resource, name string, replicas int) {
	GinkgoHelper()
	_, err := env.Kubectl(ctx, "scale", resource, name, "-n", namespace, "--replicas="+strconv.Itoa(replicas))
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Resource sharing", Label("inference"), func() {
	// Grove's Test_RS1_HierarchicalResourceSharing, written for copse: the
	// claims of every level and scope, their names, labels and owners, the
	// pods' references with the filters applied, through scaling of each
	// level, the immutability of the fields, and the claims' end with their
	// owner. Also: a claim deleted from outside is made again.
	It("keeps the claims of every level and scope, and the pods' references to them, through scaling and deletion", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "sharing")
		platform := env.NewNamespace(ctx, "sharing-platform")
		Expect(env.Client.Create(ctx, claimTemplateObject(namespace, "replica-ext", absentDeviceClass))).To(Succeed())
		Expect(env.Client.Create(ctx, claimTemplateObject(platform, "platform", absentDeviceClass))).To(Succeed())
		pcs := hierarchyPodCliqueSet(namespace, platform)
		env.CreatePodCliqueSet(ctx, pcs, sharingWait)

		By("one PodCliqueSet replica, two sga replicas, one solo pod: 12 claims")
		shape := hierarchyShape{{sga: 2, solo: 1}}
		claims := expectClaims(ctx, namespace, "rs", shape.claims())
		Expect(claims).To(HaveLen(12))
		for name, c := range claims {
			Expect(c.Spec.Devices.Requests).To(HaveLen(1), name)
			Expect(c.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal(absentDeviceClass), name)
		}
		Expect(claims["rs-0-replica-ext"].Labels).To(HaveKeyWithValue(labels.ReplicaKey, "0"))
		Expect(claims["rs-all-all-pods"].Labels).NotTo(HaveKey(labels.ReplicaKey))
		Expect(claims["rs-0-sga-1-sga-replica"].Labels).To(And(HaveKeyWithValue(labels.ScalingGroupKey, "rs-0-sga"), HaveKeyWithValue(labels.ScalingGroupReplicaKey, "1")))
		Expect(claims["rs-0-solo-0-solo-pod"].Labels).To(And(HaveKeyWithValue(labels.PodCliqueKey, "rs-0-solo"), HaveKeyWithValue(labels.PodIndexKey, "0")))
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("scaling sga in to 1 deletes its replica 1's claims, and the PodClique's with it")
		scale(ctx, namespace, "pcsg", "rs-0-sga", 1)
		shape = hierarchyShape{{sga: 1, solo: 1}}
		Expect(expectClaims(ctx, namespace, "rs", shape.claims())).To(HaveLen(10))
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("scaling sga out to 3 makes replicas 1 and 2's claims")
		scale(ctx, namespace, "pcsg", "rs-0-sga", 3)
		shape = hierarchyShape{{sga: 3, solo: 1}}
		Expect(expectClaims(ctx, namespace, "rs", shape.claims())).To(HaveLen(14))
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("scaling solo out to 2 pods makes pod 1's claim; its two pods each have their own")
		scale(ctx, namespace, "pclq", "rs-0-solo", 2)
		shape = hierarchyShape{{sga: 3, solo: 2}}
		Expect(expectClaims(ctx, namespace, "rs", shape.claims())).To(HaveLen(15))
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("scaling solo back to 1 deletes pod 1's claim")
		scale(ctx, namespace, "pclq", "rs-0-solo", 1)
		shape = hierarchyShape{{sga: 3, solo: 1}}
		expectClaims(ctx, namespace, "rs", shape.claims())
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("a second PodCliqueSet replica gets its claims, its scaling group from the template (2 replicas)")
		scale(ctx, namespace, "pcs", "rs", 2)
		shape = hierarchyShape{{sga: 3, solo: 1}, {sga: 2, solo: 1}}
		Expect(expectClaims(ctx, namespace, "rs", shape.claims())).To(HaveLen(24))
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("scaling the PodCliqueSet back to 1 deletes replica 1's claims of every level")
		scale(ctx, namespace, "pcs", "rs", 1)
		shape = hierarchyShape{{sga: 3, solo: 1}}
		claims = expectClaims(ctx, namespace, "rs", shape.claims())
		expectPodClaims(ctx, namespace, "rs", shape.pods())

		By("the webhook keeps resourceSharing immutable")
		Eventually(func(g Gomega) {
			current := env.GetPodCliqueSet(ctx, g, namespace, "rs")
			current.Spec.Template.ResourceSharing[0].Scope = perReplica
			err := env.Client.Update(ctx, current)
			g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "retry on conflict")
			framework.ExpectAdmissionInvalid(err, "validate.podcliquesets.grove.io", "spec.template.resourceSharing", "field is immutable")
		}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())

		By("a claim of each level deleted from outside is made again by its owner's controller")
		deleted := []string{"rs-all-all-pods", "rs-0-sga-2-sga-replica", "rs-0-solo-all-platform"}
		for _, name := range deleted {
			c := claims[name]
			Expect(env.Client.Delete(ctx, &c)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			now := sharedClaims(ctx, g, namespace, "rs")
			for _, name := range deleted {
				g.Expect(now).To(HaveKey(name))
				g.Expect(now[name].UID).NotTo(Equal(claims[name].UID), "claim %s is the deleted one", name)
			}
		}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
		expectClaims(ctx, namespace, "rs", shape.claims())

		By("deleting the PodCliqueSet deletes every claim with it")
		Expect(env.Client.Delete(ctx, pcs)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(sharedClaims(ctx, g, namespace, "rs")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
	})

	// The real scheduler allocates the shared claims on the simulated
	// NVIDIA driver's channel devices: the AllReplicas claim is reserved for
	// the pods of both replicas, each PerReplica claim for its replica's
	// pod only. The AllReplicas claim comes from a ResourceClaimTemplate
	// object created after the PodCliqueSet: until then no pod is created.
	It("lets the scheduler allocate one claim to pods of two replicas, and one claim per replica, once the template exists", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "sharing-alloc")
		pcs := framework.NewPodCliqueSet(namespace, "share", 2, framework.CliqueTemplate("worker", 1, framework.PodSpec(0)))
		pcs.Spec.Template.ResourceClaimTemplates = []grovecorev1alpha1.ResourceClaimTemplateConfig{internalTemplate("own", nvidiadra.ChannelDeviceClass)}
		pcs.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{
			{ResourceSharingSpec: sharing("common", allReplicas)},
			{ResourceSharingSpec: sharing("own", perReplica)},
		}
		env.CreatePodCliqueSet(ctx, pcs, sharingWait)

		By("without the template of common, the per-replica claims exist and no pod is created")
		owner := claimOwner{"PodCliqueSet", "share"}
		expectClaims(ctx, namespace, "share", map[string]claimOwner{"share-0-own": owner, "share-1-own": owner})
		Consistently(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, namespace, "share")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("once it is created, the claim is made and both pods refer to it")
		Expect(env.Client.Create(ctx, claimTemplateObject(namespace, "common", nvidiadra.ChannelDeviceClass))).To(Succeed())
		expectClaims(ctx, namespace, "share", map[string]claimOwner{"share-all-common": owner, "share-0-own": owner, "share-1-own": owner})
		expectPodClaims(ctx, namespace, "share", map[string][]string{
			"share-0-worker/0": {"share-all-common", "share-0-own"},
			"share-1-worker/0": {"share-all-common", "share-1-own"},
		})

		By("the scheduler places both pods with the shared claim allocated and reserved for both")
		podOf := map[int]corev1.Pod{}
		var claims map[string]resourcev1.ResourceClaim
		Eventually(func(g Gomega) {
			for _, p := range env.LivePods(ctx, g, namespace, "share") {
				replica, err := strconv.Atoi(p.Labels[labels.ReplicaKey])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", p.Name)
				podOf[replica] = p
			}
			g.Expect(podOf).To(HaveLen(2))
			claims = sharedClaims(ctx, g, namespace, "share")
			for _, c := range claims {
				g.Expect(c.Status.Allocation).NotTo(BeNil(), "claim %s is not allocated", c.Name)
			}
			g.Expect(claims["share-all-common"].Status.ReservedFor).To(ConsistOf(
				HaveField("UID", podOf[0].UID), HaveField("UID", podOf[1].UID)))
			g.Expect(claims["share-0-own"].Status.ReservedFor).To(ConsistOf(HaveField("UID", podOf[0].UID)))
			g.Expect(claims["share-1-own"].Status.ReservedFor).To(ConsistOf(HaveField("UID", podOf[1].UID)))
		}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
		Expect(podOf[0].Spec.NodeName).To(Equal(podOf[1].Spec.NodeName), "a node-local device shared by both pods puts them on one node")
		devices := map[string]bool{}
		for name, c := range claims {
			result := c.Status.Allocation.Devices.Results[0]
			Expect(result.Driver).To(Equal(nvidiadra.DriverName), name)
			Expect(result.Pool).To(Equal(podOf[0].Spec.NodeName), name)
			devices[result.Device] = true
		}
		Expect(devices).To(HaveLen(3), "each claim its own channel: the per-replica claims are distinct")

		By("scaling in deletes replica 1's claim once its pod is gone; the shared claim stays, reserved for replica 0")
		scale(ctx, namespace, "pcs", "share", 1)
		Eventually(func(g Gomega) {
			claims := sharedClaims(ctx, g, namespace, "share")
			g.Expect(claims).To(HaveLen(2))
			g.Expect(claims).To(HaveKey("share-all-common"))
			g.Expect(claims).To(HaveKey("share-0-own"))
			g.Expect(claims["share-all-common"].Status.ReservedFor).To(ConsistOf(HaveField("UID", podOf[0].UID)))
		}).WithContext(ctx).WithTimeout(sharingWait).Should(Succeed())
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "share-0-own"}, &resourcev1.ResourceClaim{})).To(Succeed())
	})
})
