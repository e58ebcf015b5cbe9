package placement_test

import (
	"context"
	"slices"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

const packingWait = 2 * time.Minute

// levelKey is the node label key of one of the simulated fleet's levels.
func levelKey(domain grovecorev1alpha1.TopologyDomain) string {
	for _, l := range fleetLevels() {
		if l.Domain == domain {
			return l.Key
		}
	}
	return ""
}

// Placement is asserted from the nodes the scheduler bound the pods to and
// those nodes' labels, never from copse's own objects alone. The default
// fleet is 1 zone x 2 blocks x 2 racks x 4 nodes x 4 GPUs; pod sizes are
// chosen so that a spread placement would fail each check.
var _ = Describe("Topology packing of PodCliqueSet gangs", Label("placement"), func() {
	var (
		namespace string
		binding   string
	)

	BeforeEach(func(ctx context.Context) {
		namespace, binding = onIdleFleet(ctx, "packing")
	})

	DescribeTable("required packing puts every pod of the replica's gang in one domain",
		func(ctx context.Context, domain grovecorev1alpha1.TopologyDomain, pods int32, gpus int64, wantWider string) {
			pcs := framework.NewPodCliqueSet(namespace, "pack-"+string(domain), 1, framework.CliqueTemplate("worker", pods, framework.PodSpec(gpus)))
			pcs.Spec.Template.TopologyConstraint = packAt(binding, domain, "")
			createPCS(ctx, pcs)

			bound := boundPods(ctx, namespace, pcs.Name, int(pods))
			Expect(domainsOf(ctx, bound, levelKey(domain))).To(HaveLen(1), "pods in more than one %s", domain)
			if wantWider != "" {
				// The packing is not trivially met by smaller pods: the gang
				// needs more than one domain of the level below.
				Expect(len(domainsOf(ctx, bound, wantWider))).To(BeNumerically(">", 1))
			}
			var groups schedulingv1beta1.PodGroupList
			Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
			Expect(groups.Items).To(HaveLen(1))
			Expect(groups.Items[0].Spec.SchedulingConstraints).To(Equal(&schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: levelKey(domain)}}}))
			expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
				metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)
			expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled,
				metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled)
		},
		Entry("host: 4 pods x 1 GPU on one node", grovecorev1alpha1.TopologyDomainHost, int32(4), int64(1), ""),
		Entry("rack: 4 pods x 4 GPUs fill one rack", grovecorev1alpha1.TopologyDomainRack, int32(4), int64(4), cluster.LabelHostname),
		Entry("block: 6 pods x 4 GPUs span two racks of one block", grovecorev1alpha1.TopologyDomainBlock, int32(6), int64(4), cluster.LabelRack),
		Entry("zone: 10 pods x 4 GPUs span two blocks of the zone", grovecorev1alpha1.TopologyDomainZone, int32(10), int64(4), cluster.LabelBlock),
	)

	It("leaves a gang that fits in no domain of its level wholly Pending, saying why", func(ctx context.Context) {
		// A rack holds 4 nodes x 4 GPUs; 5 pods x 4 GPUs fit in the
		// fleet but in no rack.
		pcs := framework.NewPodCliqueSet(namespace, "too-big", 1, framework.CliqueTemplate("worker", 5, framework.PodSpec(4)))
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
		createPCS(ctx, pcs)

		By("the PodGroup is judged unschedulable by the scheduler")
		Eventually(func(g Gomega) {
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "too-big-0"}, pg)).To(Succeed())
			cond := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(schedulingv1beta1.PodGroupReasonUnschedulable))
		}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())

		By("the PodCliqueSet says which gang and why")
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(env.GetPodCliqueSet(ctx, g, namespace, pcs.Name).Status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonGangUnschedulable))
			g.Expect(cond.Message).To(ContainSubstring("too-big-0 (Unschedulable: "))
		}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())

		By("no pod is bound, for a while")
		Consistently(func(g Gomega) {
			pods := env.LivePods(ctx, g, namespace, pcs.Name)
			g.Expect(pods).To(HaveLen(5))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s was bound: a partial gang", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
			}
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("packs two workloads into different domains when one cannot hold both", func(ctx context.Context) {
		// 3 pods x 4 GPUs each: a rack (4 nodes) holds one of them.
		var names []string
		for _, name := range []string{"first", "second"} {
			pcs := framework.NewPodCliqueSet(namespace, name, 1, framework.CliqueTemplate("worker", 3, framework.PodSpec(4)))
			pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
			createPCS(ctx, pcs)
			names = append(names, name)
		}
		var racks []string
		for _, name := range names {
			rack := domainsOf(ctx, boundPods(ctx, namespace, name, 3), cluster.LabelRack)
			Expect(rack).To(HaveLen(1), "%s is spread over racks", name)
			racks = append(racks, rack[0])
		}
		Expect(racks[0]).NotTo(Equal(racks[1]), "both workloads in rack %s", racks[0])
	})

	It("packs a scaling group's replicas at their own level inside the replica's packing", func(ctx context.Context) {
		// Template packed at block, scaling group at rack, 2 replicas with
		// minAvailable 1: group replica 0 joins the base gang (the block),
		// its rack packing is pod affinity; group replica 1 is a gang of its
		// own, its PodGroup packed at rack in a rack of its own. The routers
		// take no GPU: the scheduler places a gang's pods one by one, and
		// GPU routers could leave the rack of the first worker too full for
		// the others (docs/placement.md, copse's mapping).
		router := framework.CliqueTemplate("router", 2, framework.PodSpec(0))
		worker := framework.CliqueTemplate("worker", 3, framework.PodSpec(4))
		pcs := framework.NewPodCliqueSet(namespace, "grouped", 1, router, worker)
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainBlock, "")
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
			TopologyConstraint: packAt("", grovecorev1alpha1.TopologyDomainRack, ""),
		}}
		createPCS(ctx, pcs)

		pods := boundPods(ctx, namespace, pcs.Name, 2+3+3)
		byGroupReplica := map[string][]corev1.Pod{}
		var baseGang []corev1.Pod
		for _, p := range pods {
			if j, ok := p.Labels[labels.ScalingGroupReplicaKey]; ok {
				byGroupReplica[j] = append(byGroupReplica[j], p)
			}
			if p.Labels[labels.PodGangKey] == "grouped-0" {
				baseGang = append(baseGang, p)
			}
		}
		Expect(byGroupReplica).To(HaveLen(2))
		for j, groupPods := range byGroupReplica {
			Expect(groupPods).To(HaveLen(3))
			Expect(domainsOf(ctx, groupPods, cluster.LabelRack)).To(HaveLen(1), "group replica %s is spread over racks", j)
		}
		Expect(baseGang).To(HaveLen(2 + 3))
		Expect(domainsOf(ctx, pods, cluster.LabelBlock)).To(HaveLen(1), "the replica is spread over blocks: its scaled gang left the base gang's")

		var scaled schedulingv1beta1.PodGroup
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "grouped-0-workers-1"}, &scaled)).To(Succeed())
		Expect(scaled.Spec.SchedulingConstraints.Topology).To(Equal([]schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelRack}}))
		expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled,
			metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled)
	})

	It("holds a scaled gang in its replica's block though the scheduler would rather pack it in another", func(ctx context.Context) {
		// The scheduler scores each domain a gang fits in by how allocated
		// it is (bin packing). A pod holding most of a node's memory in
		// block 1 makes block 1's racks the best-scored for any gang; the
		// replica's base gang is pinned to block 0 by its router's node
		// selector, so only the hold to the base gang's domain keeps the
		// scaled gang (a rack-packed scaling-group replica above
		// minAvailable) in block 0.
		base := cluster.Placement{Zone: 0, Block: 0}
		other := cluster.Placement{Zone: 0, Block: 1, Rack: 0, Index: 0}
		filler := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "filler"}, Spec: framework.PodSpec(0)}
		filler.Spec.NodeSelector = map[string]string{cluster.LabelHostname: other.NodeName()}
		filler.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("900Gi")}
		Expect(env.Client.Create(ctx, filler)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, filler, client.GracePeriodSeconds(0)))).To(Succeed())
		})
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(filler), filler)).To(Succeed())
			g.Expect(filler.Spec.NodeName).To(Equal(other.NodeName()))
		}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())

		router := framework.CliqueTemplate("router", 1, framework.PodSpec(0))
		router.Spec.PodSpec.NodeSelector = map[string]string{cluster.LabelBlock: base.BlockName()}
		worker := framework.CliqueTemplate("worker", 2, framework.PodSpec(4))
		pcs := framework.NewPodCliqueSet(namespace, "held", 1, router, worker)
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainBlock, "")
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
			TopologyConstraint: packAt("", grovecorev1alpha1.TopologyDomainRack, ""),
		}}
		createPCS(ctx, pcs)

		pods := boundPods(ctx, namespace, pcs.Name, 1+2+2)
		Expect(domainsOf(ctx, pods, cluster.LabelBlock)).To(Equal([]string{base.BlockName()}), "the scaled gang left its replica's block")
		scaled := podsLabelled(pods, labels.PodGangKey, "held-0-workers-1")
		Expect(scaled).To(HaveLen(2))
		Expect(domainsOf(ctx, scaled, cluster.LabelRack)).To(HaveLen(1), "the scaled gang is spread over racks")
		expectGangKey(ctx, namespace, "held-0-workers-1", cluster.LabelRack)
		expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled,
			metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled)
	})

	It("leaves a scaled gang Pending while its replica's block has no room for it, saying so", func(ctx context.Context) {
		// The base gang (6 + 2 whole-node pods) fills one block of 8 nodes;
		// the scaled gang's 2 whole-node pods would fit in the other block,
		// but belong in the base gang's.
		big := framework.CliqueTemplate("big", 6, framework.PodSpec(4))
		worker := framework.CliqueTemplate("worker", 2, framework.PodSpec(4))
		pcs := framework.NewPodCliqueSet(namespace, "full", 1, big, worker)
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainBlock, "")
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
		}}
		createPCS(ctx, pcs)

		baseGang := boundPods(ctx, namespace, pcs.Name, 6+2, client.MatchingLabels{labels.PodGangKey: "full-0"})
		Expect(domainsOf(ctx, baseGang, cluster.LabelBlock)).To(HaveLen(1), "the base gang is spread over blocks")

		By("PodGangsScheduled=False names the scaled gang with the scheduler's reason")
		cond := expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled,
			metav1.ConditionFalse, copsev1alpha1.ReasonGangUnschedulable)
		Expect(cond.Message).To(ContainSubstring("full-0-workers-1 (Unschedulable: "))
		Expect(cond.Message).NotTo(ContainSubstring("full-0 ("))

		By("the scaled gang's pods stay unbound")
		Consistently(func(g Gomega) {
			scaled := env.LivePods(ctx, g, namespace, pcs.Name, client.MatchingLabels{labels.PodGangKey: "full-0-workers-1"})
			g.Expect(scaled).To(HaveLen(2))
			for _, p := range scaled {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s of the scaled gang was bound outside its replica's block", p.Name)
			}
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("packs a clique narrower than its gang through pod affinity, required and preferred", func(ctx context.Context) {
		// The gang is packed at block; clique "tight" must share one host
		// (required), clique "loose" prefers to (and has room to).
		tight := framework.CliqueTemplate("tight", 4, framework.PodSpec(1))
		tight.TopologyConstraint = packAt("", grovecorev1alpha1.TopologyDomainHost, "")
		loose := framework.CliqueTemplate("loose", 3, framework.PodSpec(1))
		loose.TopologyConstraint = packAt("", "", grovecorev1alpha1.TopologyDomainHost)
		wide := framework.CliqueTemplate("wide", 2, framework.PodSpec(4))
		pcs := framework.NewPodCliqueSet(namespace, "nested", 1, tight, loose, wide)
		pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainBlock, "")
		createPCS(ctx, pcs)

		pods := boundPods(ctx, namespace, pcs.Name, 4+3+2)
		Expect(domainsOf(ctx, pods, cluster.LabelBlock)).To(HaveLen(1), "the gang is spread over blocks")
		byClique := map[string][]corev1.Pod{}
		for _, p := range pods {
			byClique[p.Labels[labels.CliqueTemplateKey]] = append(byClique[p.Labels[labels.CliqueTemplateKey]], p)
		}
		Expect(domainsOf(ctx, byClique["tight"], cluster.LabelHostname)).To(HaveLen(1), "the required clique is spread over hosts")
		Expect(domainsOf(ctx, byClique["loose"], cluster.LabelHostname)).To(HaveLen(1), "the preferred clique is spread over hosts though one had room")
	})

	It("keeps the packing for a Training replica's new attempt after a restart", func(ctx context.Context) {
		pcs := rackPackedTraining(namespace, "train", binding, 4)
		createPCS(ctx, pcs)

		first := boundPods(ctx, namespace, pcs.Name, 4, client.MatchingLabels{labels.AttemptKey: "0"})
		Expect(domainsOf(ctx, first, cluster.LabelRack)).To(HaveLen(1))
		By("a worker exits 1: the replica restarts")
		env.MakePodExit(ctx, &first[0], "1")

		second := boundPods(ctx, namespace, pcs.Name, 4, client.MatchingLabels{labels.AttemptKey: "1"})
		Expect(domainsOf(ctx, second, cluster.LabelRack)).To(HaveLen(1), "the new attempt is spread over racks")
		expectPodGroupKey(ctx, namespace, "train-0", "1", cluster.LabelRack)
	})

	It("restarts a packed MNNVL replica in place: the kept pods on their nodes, the rack, the PodGroup and the ComputeDomain unchanged", func(ctx context.Context) {
		pcs := inMNNVLGroup(rackPackedTraining(namespace, "inplace", binding, 4))
		pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
		createPCS(ctx, pcs)

		first := boundPods(ctx, namespace, pcs.Name, 4, client.MatchingLabels{labels.AttemptKey: "0"})
		Expect(domainsOf(ctx, first, cluster.LabelRack)).To(HaveLen(1))
		domain := waitComputeDomains(ctx, namespace, "inplace-0-fabric")["inplace-0-fabric"]
		gang := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "inplace-0"}, gang)).To(Succeed())

		By("a worker exits 1: the replica restarts in place")
		env.MakePodExit(ctx, &first[0], "1")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, namespace, pcs.Name)
			g.Expect(got.Status.ReplicaRecreations).To(ConsistOf(And(HaveField("InPlace", BeTrue()), HaveField("BarrierLiftedAt", Not(BeNil())))))
		}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())
		second := boundPods(ctx, namespace, pcs.Name, 4, client.MatchingLabels{labels.AttemptKey: "1"})
		for _, was := range first[1:] {
			Expect(second).To(ContainElement(And(HaveField("UID", was.UID), HaveField("Spec.NodeName", was.Spec.NodeName))), "pod %s kept on its node", was.Name)
		}
		Expect(domainsOf(ctx, second, cluster.LabelRack)).To(Equal(domainsOf(ctx, first, cluster.LabelRack)), "the replica stays in its rack")
		now := waitComputeDomains(ctx, namespace, "inplace-0-fabric")["inplace-0-fabric"]
		Expect(now.GetUID()).To(Equal(domain.GetUID()), "the ComputeDomain is kept")
		expectChannelOf(ctx, second, now)
		kept := &schedulingv1beta1.PodGroup{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "inplace-0"}, kept)).To(Succeed())
		Expect(kept.UID).To(Equal(gang.UID), "the PodGroup is kept")
	})

	It("reports a binding deleted under a PodCliqueSet and leaves its level off the next attempt's gang", func(ctx context.Context) {
		pcs := rackPackedTraining(namespace, "orphaned", binding, 2)
		createPCS(ctx, pcs)
		first := boundPods(ctx, namespace, pcs.Name, 2, client.MatchingLabels{labels.AttemptKey: "0"})
		expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)

		By("deleting the ClusterTopologyBinding")
		Expect(env.Client.Delete(ctx, &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: binding}})).To(Succeed())
		cond := expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionUnknown, copsev1alpha1.ReasonClusterTopologyNotFound)
		Expect(cond.Message).To(ContainSubstring("spec.template.topologyConstraint.topologyName"))
		Expect(cond.Message).To(ContainSubstring(binding))

		By("a restart: the new attempt's gang carries no topology key")
		env.MakePodExit(ctx, &first[0], "1")
		boundPods(ctx, namespace, pcs.Name, 2, client.MatchingLabels{labels.AttemptKey: "1"})
		expectPodGroupKey(ctx, namespace, "orphaned-0", "1", "")
	})

	It("sets no placement condition on a PodCliqueSet without constraints", func(ctx context.Context) {
		pcs := framework.NewPodCliqueSet(namespace, "plain", 1, framework.CliqueTemplate("worker", 2, framework.PodSpec(1)))
		createPCS(ctx, pcs)
		boundPods(ctx, namespace, pcs.Name, 2)
		expectCondition(ctx, namespace, pcs.Name, copsev1alpha1.ConditionTypePodGangsScheduled,
			metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled)
		Consistently(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, namespace, pcs.Name)
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable)).To(BeNil())
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

// packAt is a topologyConstraint naming binding (may be "" to inherit).
func packAt(binding string, required, preferred grovecorev1alpha1.TopologyDomain) *grovecorev1alpha1.TopologyConstraint {
	return &grovecorev1alpha1.TopologyConstraint{TopologyName: binding,
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: required, PreferredDomain: preferred}}
}

// rackPackedTraining is a Training PodCliqueSet of workers whole-node GPU
// pods packed at rack, with one restart allowed.
func rackPackedTraining(namespace, name, binding string, workers int32) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewTrainingPodCliqueSet(namespace, name, 1, 1, framework.CliqueTemplate("worker", workers, framework.PodSpec(4)))
	pcs.Spec.Template.TopologyConstraint = packAt(binding, grovecorev1alpha1.TopologyDomainRack, "")
	return pcs
}

// createPCS creates pcs; after the spec it is deleted and its pods are
// waited out, so the next spec finds the fleet free.
func createPCS(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) {
	GinkgoHelper()
	env.CreatePodCliqueSet(ctx, pcs, packingWait)
}

// onIdleFleet starts a spec that counts on every GPU of the fleet: it waits
// until the fleet is idle and makes the spec's namespace and a
// ClusterTopologyBinding of the fleet's levels, which is cluster-scoped,
// named after the namespace and deleted after the spec.
func onIdleFleet(ctx context.Context, prefix string) (namespace, binding string) {
	GinkgoHelper()
	expectFleetIdle(ctx)
	namespace = env.NewNamespace(ctx, prefix)
	return namespace, createBinding(ctx, namespace, fleetLevels()).Name
}

// expectFleetIdle waits until no pod holds a GPU of the fleet: the specs'
// arithmetic assumes every GPU is free.
func expectFleetIdle(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(env.Client.List(ctx, &pods)).To(Succeed())
		var busy []string
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || framework.IsTerminal(&p) {
				continue
			}
			for _, c := range p.Spec.Containers {
				if _, ok := c.Resources.Limits[cluster.ResourceGPU]; ok {
					busy = append(busy, p.Namespace+"/"+p.Name)
					break
				}
			}
		}
		g.Expect(busy).To(BeEmpty(), "pods of other specs hold GPUs")
	}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())
}

// boundPods waits until the PodCliqueSet has n live pods matching opts, all
// bound to nodes and Ready, and returns them.
func boundPods(ctx context.Context, namespace, pcsName string, n int, opts ...client.ListOption) []corev1.Pod {
	GinkgoHelper()
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = env.LivePods(ctx, g, namespace, pcsName, opts...)
		g.Expect(pods).To(HaveLen(n))
		for i := range pods {
			if pods[i].Spec.NodeName == "" {
				gangs := meta.FindStatusCondition(env.GetPodCliqueSet(ctx, g, namespace, pcsName).Status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled)
				g.Expect(pods[i].Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound; PodGangsScheduled: %+v", pods[i].Name, gangs)
			}
			g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s is not ready", pods[i].Name)
		}
	}).WithContext(ctx).WithTimeout(packingWait).Should(Succeed())
	return pods
}

// domainsOf lists the distinct values of key on the nodes of pods, sorted.
func domainsOf(ctx context.Context, pods []corev1.Pod, key string) []string {
	GinkgoHelper()
	seen := map[string]bool{}
	for _, p := range pods {
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		value, ok := node.Labels[key]
		Expect(ok).To(BeTrue(), "node %s has no label %s", node.Name, key)
		seen[value] = true
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	GinkgoWriter.Printf("%d pods on %s %s\n", len(pods), key, strings.Join(out, ","))
	return out
}

// expectCondition waits until the PodCliqueSet's condition has status and
// reason, and returns it.
func expectCondition(ctx context.Context, namespace, name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	GinkgoHelper()
	return env.ExpectPodCliqueSetCondition(ctx, namespace, name, condType, status, reason, packingWait)
}

// expectPodGroupKey checks the topology key of the PodGroup of the given
// attempt ("" for none).
func expectPodGroupKey(ctx context.Context, namespace, name, attempt, key string) {
	GinkgoHelper()
	pg := &schedulingv1beta1.PodGroup{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg)).To(Succeed())
	Expect(pg.Labels[labels.AttemptKey]).To(Equal(attempt))
	if key == "" {
		Expect(pg.Spec.SchedulingConstraints).To(BeNil())
		return
	}
	Expect(pg.Spec.SchedulingConstraints).To(Equal(&schedulingv1beta1.PodGroupSchedulingConstraints{
		Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}))
}
