package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
)

// topologyWait bounds a wait for copse and Kueue to react: a sync, an
// admission, pods ungated, bound and Ready.
const topologyWait = 90 * time.Second

// The fleet's levels (e2e/cluster/topology.go): 1 zone x 2 blocks x 2 racks
// x 4 nodes of 4 GPUs.
var fleetKeys = []string{cluster.LabelZone, cluster.LabelBlock, cluster.LabelRack, cluster.LabelHostname}

func levelsOf(keys ...string) []grovecorev1alpha1.TopologyLevel {
	domains := map[string]grovecorev1alpha1.TopologyDomain{cluster.LabelZone: "zone", cluster.LabelBlock: "block",
		cluster.LabelRack: "rack", cluster.LabelHostname: "host"}
	out := make([]grovecorev1alpha1.TopologyLevel, len(keys))
	for i, k := range keys {
		out[i] = grovecorev1alpha1.TopologyLevel{Domain: domains[k], Key: k}
	}
	return out
}

var _ = Describe("Kueue topology", Label("kueue"), func() {
	It("mirrors a ClusterTopologyBinding into a Kueue Topology, replaces it when the levels change and deletes it with the binding", func(ctx context.Context) {
		name := "mirror-" + suffix()
		binding := env.CreateClusterTopologyBinding(ctx, name, levelsOf(fleetKeys...))

		By("the Topology has the binding's keys, broadest first, and the binding as controller")
		first := expectTopology(ctx, name, fleetKeys)
		Expect(metav1.IsControlledBy(first, binding)).To(BeTrue(), "Topology %s owners: %+v", name, first.OwnerReferences)
		expectSynced(ctx, name, metav1.ConditionTrue, copsev1alpha1.ReasonKueueTopologySynced)
		Eventually(func(g Gomega) {
			statuses := getBinding(ctx, g, name).Status.SchedulerTopologyStatuses
			g.Expect(statuses).To(HaveLen(1))
			g.Expect(statuses[0].SchedulerName).To(Equal("kueue"))
			g.Expect(statuses[0].TopologyReference).To(Equal(name))
			g.Expect(statuses[0].InSync).To(BeTrue())
		}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())

		By("the binding loses its zone level: a Topology's levels are immutable, so a new one replaces the old")
		setLevels(ctx, name, levelsOf(cluster.LabelBlock, cluster.LabelRack, cluster.LabelHostname))
		second := expectTopology(ctx, name, []string{cluster.LabelBlock, cluster.LabelRack, cluster.LabelHostname})
		Expect(second.UID).NotTo(Equal(first.UID))
		expectSynced(ctx, name, metav1.ConditionTrue, copsev1alpha1.ReasonKueueTopologySynced)
		expectBindingEvent(ctx, name, "KueueTopologyReplacing")

		By("a ResourceFlavor names the Topology: Kueue keeps it while it does, so a change of levels waits for the flavor to go")
		flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok},
				TopologyName: ptr.To(kueue.TopologyReference(name))}}
		Expect(env.Client.Create(ctx, flavor)).To(Succeed())
		Eventually(func(g Gomega) {
			t := &kueue.Topology{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, t)).To(Succeed())
			g.Expect(t.Finalizers).To(ContainElement(kueue.ResourceInUseFinalizerName))
		}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
		setLevels(ctx, name, levelsOf(cluster.LabelRack, cluster.LabelHostname))
		held := expectSynced(ctx, name, metav1.ConditionFalse, copsev1alpha1.ReasonKueueTopologyReplacing)
		Expect(held.Message).To(ContainSubstring("Kueue keeps it while a ResourceFlavor names it"))
		Consistently(func(g Gomega) {
			t := &kueue.Topology{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, t)).To(Succeed())
			g.Expect(t.UID).To(Equal(second.UID))
			g.Expect(t.DeletionTimestamp).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(env.Client.Delete(ctx, flavor)).To(Succeed())
		third := expectTopology(ctx, name, []string{cluster.LabelRack, cluster.LabelHostname})
		Expect(third.UID).NotTo(Equal(second.UID))
		expectSynced(ctx, name, metav1.ConditionTrue, copsev1alpha1.ReasonKueueTopologySynced)

		By("deleting the binding deletes its Topology (owner reference)")
		Expect(env.Client.Delete(ctx, binding)).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &kueue.Topology{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Topology %s still there: %v", name, err)
		}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
	})

	It("leaves a Topology it did not create alone, and reports levels Kueue cannot hold", func(ctx context.Context) {
		name := "foreign-" + suffix()
		foreign := &kueue.Topology{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueue.TopologySpec{Levels: []kueue.TopologyLevel{{NodeLabel: cluster.LabelBlock}}}}
		Expect(env.Client.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, foreign))).To(Succeed())
		})
		env.CreateClusterTopologyBinding(ctx, name, levelsOf(fleetKeys...))
		notOwned := expectSynced(ctx, name, metav1.ConditionFalse, copsev1alpha1.ReasonKueueTopologyNotOwned)
		Expect(notOwned.Message).To(ContainSubstring("was not created by copse for this binding (no controller): copse leaves it alone"))
		expectBindingEvent(ctx, name, "KueueTopologyNotOwned")
		Consistently(func(g Gomega) {
			t := &kueue.Topology{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, t)).To(Succeed())
			g.Expect(t.UID).To(Equal(foreign.UID))
			g.Expect(copsekueue.TopologyLevels(t)).To(Equal([]string{cluster.LabelBlock}))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("once the foreign Topology is gone, copse makes its own")
		Expect(env.Client.Delete(ctx, foreign)).To(Succeed())
		expectTopology(ctx, name, fleetKeys)
		expectSynced(ctx, name, metav1.ConditionTrue, copsev1alpha1.ReasonKueueTopologySynced)

		By("kubernetes.io/hostname above the narrowest level: no Topology, the level named")
		bad := "hostfirst-" + suffix()
		env.CreateClusterTopologyBinding(ctx, bad, levelsOf(cluster.LabelHostname, cluster.LabelRack))
		unsupported := expectSynced(ctx, bad, metav1.ConditionFalse, copsev1alpha1.ReasonKueueLevelsUnsupported)
		Expect(unsupported.Message).To(ContainSubstring(`spec.levels[0].key: Invalid value: "kubernetes.io/hostname": ` +
			"Kueue's Topology takes kubernetes.io/hostname only as its last (narrowest) level"))
		expectBindingEvent(ctx, bad, "KueueLevelsUnsupported")
		Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: bad}, &kueue.Topology{}))).To(BeTrue())
	})

	It("keeps a packed PodCliqueSet waiting in a ClusterQueue without a topology-aware flavor, quoting Kueue", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "kueue-plain")
		bindingName := ns
		env.CreateClusterTopologyBinding(ctx, bindingName, levelsOf(fleetKeys...))
		queues := framework.KueueQueues{ClusterQueue: ns, Flavor: framework.KueueFlavor{Name: ns},
			Quota: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("64")}, Namespaces: []string{ns}}
		Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(framework.DeleteKueueQueues(ctx, env.Client, queues)).To(Succeed())
		})
		pcs := rackPacked(ns, "plain", bindingName, queues.ClusterQueue, 1, 2)
		env.CreatePodCliqueSet(ctx, pcs, topologyWait)
		pending := env.ExpectPodCliqueSetCondition(ctx, ns, pcs.Name, copsev1alpha1.ConditionTypeAdmitted, metav1.ConditionFalse, copsev1alpha1.ReasonPending, topologyWait)
		Eventually(func(g Gomega) {
			pending = apimeta.FindStatusCondition(env.GetPodCliqueSet(ctx, g, ns, pcs.Name).Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
			g.Expect(pending.Message).To(ContainSubstring(fmt.Sprintf("Flavor %q does not support TopologyAwareScheduling", ns)))
		}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
		GinkgoWriter.Printf("Admitted: %s\n", pending.Message)
		Expect(env.Pods(ctx, Default, ns, pcs.Name)).To(BeEmpty())
	})

	Context("a PodCliqueSet packed at rack and queued on a topology-aware flavor", Ordered, func() {
		var ns, bindingName string
		var queues framework.KueueQueues
		BeforeAll(func(ctx context.Context) {
			ns = env.NewNamespace(ctx, "kueue-tas")
			bindingName = ns
			env.CreateClusterTopologyBinding(ctx, bindingName, levelsOf(fleetKeys...))
			expectTopology(ctx, bindingName, fleetKeys)
			queues = framework.KueueQueues{
				ClusterQueue: ns,
				Flavor:       framework.KueueFlavor{Name: ns, NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok}, TopologyName: bindingName},
				// The whole fleet: 16 nodes of 4 GPUs. Quota never holds these
				// specs back; the topology does.
				Quota:      corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("64")},
				Namespaces: []string{ns},
			}
			Expect(framework.CreateKueueQueues(ctx, env.Client, queues)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(framework.DeleteKueueQueues(ctx, env.Client, queues)).To(Succeed())
			})
		})

		It("asks Kueue for the rack, is admitted with an assignment in one rack, and its pods land there", func(ctx context.Context) {
			pcs := rackPacked(ns, "one-rack", bindingName, queues.ClusterQueue, 1, 4)
			env.CreatePodCliqueSet(ctx, pcs, topologyWait)

			wl := expectAdmittedWithTopology(ctx, pcs)
			Expect(wl.Spec.PodSets).To(HaveLen(1))
			Expect(wl.Spec.PodSets[0].TopologyRequest).NotTo(BeNil())
			Expect(wl.Spec.PodSets[0].TopologyRequest.Required).To(Equal(ptr.To(cluster.LabelRack)))
			assigned := assignedNodes(wl, "worker")
			Expect(assigned).To(HaveLen(4))
			Expect(racksOf(ctx, assigned)).To(HaveLen(1), "Kueue assigned nodes %v", assigned)

			pods := pinnedPods(ctx, ns, pcs.Name, 4)
			Expect(racksOf(ctx, nodesOf(pods))).To(Equal(racksOf(ctx, assigned)))
		})

		It("puts two such PodCliqueSets that cannot share a rack in two racks", func(ctx context.Context) {
			// 3 whole nodes each: a rack of 4 nodes holds one of them.
			first := rackPacked(ns, "first", bindingName, queues.ClusterQueue, 1, 3)
			second := rackPacked(ns, "second", bindingName, queues.ClusterQueue, 1, 3)
			env.CreatePodCliqueSet(ctx, first, topologyWait)
			env.CreatePodCliqueSet(ctx, second, topologyWait)
			var racks [][]string
			for _, pcs := range []*copsev1alpha1.PodCliqueSet{first, second} {
				wl := expectAdmittedWithTopology(ctx, pcs)
				assigned := assignedNodes(wl, "worker")
				Expect(racksOf(ctx, assigned)).To(HaveLen(1), "Kueue assigned %s nodes %v", pcs.Name, assigned)
				pods := pinnedPods(ctx, ns, pcs.Name, 3)
				Expect(racksOf(ctx, nodesOf(pods))).To(Equal(racksOf(ctx, assigned)))
				racks = append(racks, racksOf(ctx, assigned))
			}
			Expect(racks[0]).NotTo(Equal(racks[1]), "both PodCliqueSets in rack %v", racks[0])
		})

		It("packs each replica in a rack of its own: one slice per replica, ordered by copse.dev/podset-index", func(ctx context.Context) {
			// 2 replicas of 3 whole nodes: no rack holds both.
			pcs := rackPacked(ns, "replicas", bindingName, queues.ClusterQueue, 2, 3)
			env.CreatePodCliqueSet(ctx, pcs, topologyWait)
			wl := expectAdmittedWithTopology(ctx, pcs)
			Expect(wl.Spec.PodSets[0].TopologyRequest).To(Equal(&kueue.PodSetTopologyRequest{
				PodSetSliceRequiredTopology: ptr.To(cluster.LabelRack), PodSetSliceSize: ptr.To[int32](3),
				PodIndexLabel: ptr.To(copsekueue.PodSetIndexLabel)}))
			Expect(racksOf(ctx, assignedNodes(wl, "worker"))).To(HaveLen(2))

			pods := pinnedPods(ctx, ns, pcs.Name, 6)
			for replica := range 2 {
				var of []corev1.Pod
				for _, p := range pods {
					if p.Labels[labels.ReplicaKey] == fmt.Sprint(replica) {
						of = append(of, p)
					}
				}
				Expect(of).To(HaveLen(3))
				Expect(racksOf(ctx, nodesOf(of))).To(HaveLen(1), "replica %d over racks", replica)
				for _, p := range of {
					// Pod i of replica r is index 3r+i of the pod set.
					want := fmt.Sprint(3*replica + podIndex(p))
					Expect(p.Labels).To(HaveKeyWithValue(copsekueue.PodSetIndexLabel, want), "pod %s", p.Name)
				}
			}
			env.ExpectPodCliqueSetCondition(ctx, ns, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled, metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled, topologyWait)
		})

		It("packs each replica in a block and each scaling-group replica in a rack: two levels of slices (Kueue v0.19's multi-layer topology)", func(ctx context.Context) {
			By("freeing the fleet of the earlier specs' PodCliqueSets")
			Expect(env.Client.DeleteAllOf(ctx, &copsev1alpha1.PodCliqueSet{}, client.InNamespace(ns))).To(Succeed())
			Eventually(func(g Gomega) {
				pods := &corev1.PodList{}
				g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
				g.Expect(pods.Items).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())

			// 2 replicas, each of a scaling group of 2 replicas of 3 whole
			// nodes: 12 pods, a replica's 6 in one block (2 racks of 4
			// nodes, so the two replicas need both blocks), a group
			// replica's 3 in one rack. Kueue v0.17 could not express it: a
			// pod set had slices of one size at one level.
			pcs := rackPacked(ns, "layers", bindingName, queues.ClusterQueue, 2, 3)
			pcs.Spec.Template.TopologyConstraint.Pack.RequiredDomain = "block"
			pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
				Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](2),
				TopologyConstraint: &grovecorev1alpha1.TopologyConstraint{Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}},
			}}
			env.CreatePodCliqueSet(ctx, pcs, topologyWait)
			wl := expectAdmittedWithTopology(ctx, pcs)
			Expect(wl.Spec.PodSets[0].Count).To(Equal(int32(12)))
			Expect(wl.Spec.PodSets[0].TopologyRequest).To(Equal(&kueue.PodSetTopologyRequest{
				PodsetSliceRequiredTopologyConstraints: []kueue.PodsetSliceRequiredTopologyConstraint{
					{Topology: cluster.LabelBlock, Size: 6}, {Topology: cluster.LabelRack, Size: 3}},
				PodIndexLabel: ptr.To(copsekueue.PodSetIndexLabel)}))

			pods := pinnedPods(ctx, ns, pcs.Name, 12)
			of := func(key, value string, among []corev1.Pod) []corev1.Pod {
				var out []corev1.Pod
				for _, p := range among {
					if p.Labels[key] == value {
						out = append(out, p)
					}
				}
				return out
			}
			var blocks []string
			for replica := range 2 {
				replicaPods := of(labels.ReplicaKey, fmt.Sprint(replica), pods)
				Expect(replicaPods).To(HaveLen(6))
				replicaBlocks := domainsOf(ctx, cluster.LabelBlock, nodesOf(replicaPods))
				Expect(replicaBlocks).To(HaveLen(1), "replica %d over blocks", replica)
				blocks = append(blocks, replicaBlocks...)
				for group := range 2 {
					groupPods := of(labels.ScalingGroupReplicaKey, fmt.Sprint(group), replicaPods)
					Expect(groupPods).To(HaveLen(3))
					Expect(racksOf(ctx, nodesOf(groupPods))).To(HaveLen(1), "replica %d, scaling-group replica %d over racks", replica, group)
				}
			}
			Expect(blocks[0]).NotTo(Equal(blocks[1]), "both replicas in block %s, which has 8 nodes for their 12 whole-node pods", blocks[0])
			env.ExpectPodCliqueSetCondition(ctx, ns, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled, metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled, topologyWait)
		})

		It("refuses packing Kueue cannot express at creation, naming the field, and reports it on a PodCliqueSet that joins a queue later", func(ctx context.Context) {
			threeCliques := func(name string) *copsev1alpha1.PodCliqueSet {
				pcs := rackPacked(ns, name, bindingName, queues.ClusterQueue, 1, 1)
				pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques,
					framework.CliqueTemplate("prefill", 1, framework.PodSpec(1)), framework.CliqueTemplate("decode", 1, framework.PodSpec(1)))
				return pcs
			}
			const inexpressible = "spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing"

			By("created in a queue: the webhook refuses it")
			err := env.Client.Create(ctx, threeCliques("three-cliques"))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "created, or refused for another reason: %v", err)
			Expect(err.Error()).To(ContainSubstring(inexpressible))

			By("created suspended outside any queue, then given the queue label: the Kueue controller refuses to queue it")
			later := threeCliques("joins-later")
			delete(later.Labels, copsekueue.QueueNameLabel)
			later.Spec.Suspend = ptr.To(true)
			env.CreatePodCliqueSet(ctx, later, topologyWait)
			Eventually(func(g Gomega) {
				current := env.GetPodCliqueSet(ctx, g, ns, later.Name)
				current.Labels = map[string]string{copsekueue.QueueNameLabel: queues.ClusterQueue}
				g.Expect(env.Client.Update(ctx, current)).To(Succeed())
			}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
			refused := env.ExpectPodCliqueSetCondition(ctx, ns, later.Name, copsev1alpha1.ConditionTypeAdmitted, metav1.ConditionFalse, copsev1alpha1.ReasonWorkloadRefused, topologyWait)
			Expect(refused.Message).To(ContainSubstring(inexpressible))
			Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: copsekueue.WorkloadName(later.Name)},
				&kueue.Workload{}))).To(BeTrue(), "a Workload was made")
		})
	})
})

// suffix keeps cluster-scoped names of one run apart.
func suffix() string { return fmt.Sprint(time.Now().UnixNano() % 1_000_000_000) }

func getBinding(ctx context.Context, g Gomega, name string) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, b)).To(Succeed())
	return b
}

func setLevels(ctx context.Context, name string, levels []grovecorev1alpha1.TopologyLevel) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		b := getBinding(ctx, g, name)
		b.Spec.Levels = levels
		g.Expect(env.Client.Update(ctx, b)).To(Succeed())
	}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
}

// expectTopology waits until the Kueue Topology name exists, not being
// deleted, with levels keys, and returns it.
func expectTopology(ctx context.Context, name string, keys []string) *kueue.Topology {
	GinkgoHelper()
	t := &kueue.Topology{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, t)).To(Succeed())
		g.Expect(t.DeletionTimestamp).To(BeNil())
		g.Expect(copsekueue.TopologyLevels(t)).To(Equal(keys))
	}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
	return t
}

// expectSynced waits until the binding's KueueTopologySynced has status and
// reason, for its current generation, and returns it.
func expectSynced(ctx context.Context, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	GinkgoHelper()
	var cond *metav1.Condition
	Eventually(func(g Gomega) {
		b := getBinding(ctx, g, name)
		cond = apimeta.FindStatusCondition(b.Status.Conditions, copsev1alpha1.ConditionTypeKueueTopologySynced)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.ObservedGeneration).To(Equal(b.Generation))
		g.Expect(cond.Status).To(Equal(status), cond.Message)
		g.Expect(cond.Reason).To(Equal(reason), cond.Message)
	}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
	return cond
}

func expectBindingEvent(ctx context.Context, name, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var about []string
		for _, ev := range env.EventsWithReason(ctx, g, metav1.NamespaceDefault, reason) {
			if ev.Regarding.Kind == "ClusterTopologyBinding" && ev.Regarding.Name == name {
				about = append(about, ev.Note)
			}
		}
		g.Expect(about).NotTo(BeEmpty(), "no %s event about ClusterTopologyBinding %s", reason, name)
	}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
}

// rackPacked is a PodCliqueSet in LocalQueue queue of replicas replicas of
// one clique, worker, of pods whole nodes (4 GPUs), each replica packed
// in one rack of binding.
func rackPacked(namespace, name, binding, queue string, replicas, pods int32) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewPodCliqueSet(namespace, name, replicas, framework.CliqueTemplate("worker", pods, framework.PodSpec(4)))
	pcs.Labels = map[string]string{copsekueue.QueueNameLabel: queue}
	pcs.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: binding,
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	return pcs
}

// expectAdmittedWithTopology waits until pcs's Workload is admitted with a
// topology assignment for every pod set, and returns it.
func expectAdmittedWithTopology(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) *kueue.Workload {
	GinkgoHelper()
	wl := &kueue.Workload{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: copsekueue.WorkloadName(pcs.Name)}, wl)).To(Succeed())
		admitted := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadAdmitted)
		reserved := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		g.Expect(admitted).NotTo(BeNil(), "Workload %s: QuotaReserved %+v", wl.Name, reserved)
		g.Expect(admitted.Status).To(Equal(metav1.ConditionTrue), "Workload %s: %s; QuotaReserved %+v", wl.Name, admitted.Message, reserved)
		for _, a := range wl.Status.Admission.PodSetAssignments {
			g.Expect(a.TopologyAssignment).NotTo(BeNil(), "pod set %s has no topology assignment", a.Name)
		}
	}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
	return wl
}

// assignedNodes lists the nodes of a pod set's topology assignment, one
// entry per pod, sorted. The fleet's Topology ends at the hostname, so
// Kueue assigns nodes.
func assignedNodes(wl *kueue.Workload, podSet string) []string {
	GinkgoHelper()
	var out []string
	for _, a := range wl.Status.Admission.PodSetAssignments {
		if string(a.Name) != podSet {
			continue
		}
		ta := a.TopologyAssignment
		Expect(ta.Levels).To(Equal([]string{cluster.LabelHostname}))
		for _, s := range ta.Slices {
			for d := range int(s.DomainCount) {
				host := domainValue(s.ValuesPerLevel[0], d)
				count := ptr.Deref(s.PodCounts.Universal, 0)
				if s.PodCounts.Individual != nil {
					count = s.PodCounts.Individual[d]
				}
				for range count {
					out = append(out, host)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func domainValue(v kueue.TopologyAssignmentSliceLevelValues, d int) string {
	if v.Universal != nil {
		return *v.Universal
	}
	return ptr.Deref(v.Individual.Prefix, "") + v.Individual.Roots[d] + ptr.Deref(v.Individual.Suffix, "")
}

// pinnedPods waits until pcs has n live pods, each ungated by Kueue (no
// kueue.x-k8s.io/topology gate, a nodeSelector on the node it was
// assigned), bound to that node and Ready; it returns them.
func pinnedPods(ctx context.Context, namespace, name string, n int) []corev1.Pod {
	GinkgoHelper()
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = env.LivePods(ctx, g, namespace, name)
		g.Expect(pods).To(HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Spec.SchedulingGates).To(BeEmpty(), "pod %s is still gated", p.Name)
			g.Expect(p.Annotations).To(HaveKeyWithValue(kueue.WorkloadAnnotation, copsekueue.WorkloadName(name)))
			g.Expect(p.Labels).To(HaveKeyWithValue(copsekueue.PodSetLabel, "worker"))
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound", p.Name)
			g.Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelHostname, p.Spec.NodeName),
				"pod %s was not pinned by Kueue's TopologyUngater", p.Name)
			g.Expect(framework.IsReady(&p)).To(BeTrue(), "pod %s is not Ready", p.Name)
		}
	}).WithContext(ctx).WithTimeout(topologyWait).Should(Succeed())
	return pods
}

func nodesOf(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Spec.NodeName
	}
	return out
}

// racksOf lists the distinct racks of nodes, from their labels, sorted.
func racksOf(ctx context.Context, nodes []string) []string {
	GinkgoHelper()
	return domainsOf(ctx, cluster.LabelRack, nodes)
}

// domainsOf lists the distinct values of the level key of nodes, from
// their labels, sorted.
func domainsOf(ctx context.Context, key string, nodes []string) []string {
	GinkgoHelper()
	var domains []string
	for _, name := range nodes {
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, node)).To(Succeed())
		domain, ok := node.Labels[key]
		Expect(ok).To(BeTrue(), "node %s has no label %s", name, key)
		if !slices.Contains(domains, domain) {
			domains = append(domains, domain)
		}
	}
	slices.Sort(domains)
	GinkgoWriter.Printf("%d pods in %s %s\n", len(nodes), key, strings.Join(domains, ","))
	return domains
}

func podIndex(p corev1.Pod) int {
	GinkgoHelper()
	var i int
	_, err := fmt.Sscan(p.Labels[labels.PodIndexKey], &i)
	Expect(err).NotTo(HaveOccurred(), "pod %s: label %s", p.Name, labels.PodIndexKey)
	return i
}
