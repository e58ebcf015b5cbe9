package placement_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Grove's topology-aware scheduling e2e tests (operator/e2e/tests/
// topology_test.go at the commit testdata/grove-tas/PROVENANCE.md names),
// one spec per Grove test, with Grove's manifests (only the pods'
// schedulerName changed) and Grove's placement assertions: the node labels
// of the domain each pod lands in. Grove places with KAI, whose PodGroup
// carries a required and a preferred key per level; copse places with the
// kube-scheduler, so where Grove checks its KAI PodGroup these specs check
// what copse gives the kube-scheduler instead: a PodGroup's topology key for
// each gang, and pod affinity for narrower scopes. docs/placement.md ("Grove's
// topology tests") lists what cannot be expressed on the kube-scheduler.

// groveTASDir holds Grove's manifests, byte for byte (PROVENANCE.md).
const groveTASDir = "testdata/grove-tas"

// groveTASManifests names, for each manifest, the Grove test that applies it.
// Every file in groveTASDir must be here (TestEveryGroveTASManifestIsUsed).
var groveTASManifests = map[string]string{
	"tas-indep-clq.yaml":                     "TAS2",
	"tas-sl-pcs-only.yaml":                   "TAS3",
	"tas-sl-pcsg-only.yaml":                  "TAS4",
	"tas-host-level.yaml":                    "TAS5",
	"tas-standalone-pclq-only-pcs-zone.yaml": "TAS6",
	"tas-no-constraint.yaml":                 "TAS7",
	"tas-hierarchy.yaml":                     "TAS8",
	"tas-pcs-pclq.yaml":                      "TAS9",
	"tas-pcsg-scale.yaml":                    "TAS10",
	"tas-pcsg-pclq.yaml":                     "TAS11",
	"tas-large-scale.yaml":                   "TAS12",
	"tas-insuffic.yaml":                      "TAS13",
	"tas-multirep.yaml":                      "TAS14",
	"tas-pcs-multi-pcsg.yaml":                "TAS15",
	"tas-pcs-multi-pcsg-multi-replica.yaml":  "TAS16",
	"tas-multi-topology-h100.yaml":           "TAS17",
	"tas-multi-topology-gb200.yaml":          "TAS17",
	"tas-topology-condition.yaml":            "TAS20",
	"tas-preferred-pack.yaml":                "TAS23",
}

// loadGroveManifest reads one of Grove's PodCliqueSets and makes the one
// change its pods need here: Grove's tests schedule with KAI
// (schedulerName: kai-scheduler), copse's with the kube-scheduler.
func loadGroveManifest(file string) (*copsev1alpha1.PodCliqueSet, error) {
	if _, ok := groveTASManifests[file]; !ok {
		return nil, fmt.Errorf("%s is not one of groveTASManifests", file)
	}
	raw, err := os.ReadFile(filepath.Join(groveTASDir, file))
	if err != nil {
		return nil, err
	}
	// Each file is one PodCliqueSet after a comment; the comment parses as an
	// empty document of its own.
	var pcs *copsev1alpha1.PodCliqueSet
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		var probe map[string]any
		if err := sigsyaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("decode %s: %w", file, err)
		}
		if len(probe) == 0 {
			continue
		}
		if pcs != nil {
			return nil, fmt.Errorf("%s holds more than one object", file)
		}
		pcs = &copsev1alpha1.PodCliqueSet{}
		if err := sigsyaml.UnmarshalStrict(doc, pcs); err != nil {
			return nil, fmt.Errorf("decode %s: %w", file, err)
		}
	}
	if pcs == nil || pcs.Kind != "PodCliqueSet" {
		return nil, fmt.Errorf("%s holds no PodCliqueSet", file)
	}
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = corev1.DefaultSchedulerName
	}
	return pcs, nil
}

// Grove's e2e fleet (operator/hack/e2e-cluster/create-e2e-cluster.py and
// operator/e2e/setup/topology.go): worker nodes labelled and tainted
// node_role.e2e.grove.nvidia.com=agent, 7 to a rack, 14 to a block, 28 to a
// zone, each with 150Mi of memory (k3d's --agents-memory 150m); the tests
// use the first 28, in name order. Here they are a zone of their own beside
// the suite's fleet: the taint keeps copse's own specs' pods off them and
// Grove's manifests select them by the label.
const (
	groveWorkerLabel = "node_role.e2e.grove.nvidia.com"
	groveWorkerValue = "agent"
	groveZone        = 1
	groveBlocks      = 2
	groveRacks       = 2 // per block
	groveRackNodes   = 7
	groveNodeMemory  = "150Mi"
	groveNodes       = groveBlocks * groveRacks * groveRackNodes
	// groveWait bounds each wait for Grove's workloads, as Grove's own
	// tests' poll timeout does.
	groveWait = 2 * time.Minute
)

// groveTopology is Grove's shared ClusterTopologyBinding ("grove-topology":
// zone, block, rack, host), here keyed by the simulated nodes' labels.
const groveTopology = "grove-topology"

var _ = Describe("Grove's topology-aware scheduling tests", Label("placement"), Ordered, ContinueOnFailure, func() {
	// workers are Grove's worker nodes, in name order (Grove's index order).
	var workers []string

	BeforeAll(func(ctx context.Context) {
		var groups []cluster.NodeGroup
		for b := range groveBlocks {
			for r := range groveRacks {
				groups = append(groups, cluster.NodeGroup{Zone: groveZone, Block: b, Rack: r, Count: groveRackNodes,
					Shape:  cluster.NodeShape{Memory: groveNodeMemory},
					Labels: map[string]string{groveWorkerLabel: groveWorkerValue},
					Taints: []corev1.Taint{{Key: groveWorkerLabel, Value: groveWorkerValue, Effect: corev1.TaintEffectNoSchedule}}})
			}
		}
		names, err := env.Cluster.AddNodes(ctx, groups...)
		DeferCleanup(func(ctx context.Context) { Expect(env.Cluster.RemoveNodes(ctx, names...)).To(Succeed()) })
		Expect(err).NotTo(HaveOccurred())
		workers = slices.Sorted(slices.Values(names))
		Expect(workers).To(HaveLen(groveNodes))
		env.CreateClusterTopologyBinding(ctx, groveTopology, fleetLevels())
	})

	It("TAS1: the ClusterTopologyBinding is usable and every worker node carries its levels' keys", func(ctx context.Context) {
		// Grove's step 2 (a KAI Topology made from the binding) has no
		// counterpart: the kube-scheduler reads the node labels directly.
		By("the binding is Ready: every level's key is on a node")
		Eventually(func(g Gomega) {
			g.Expect(readyOf(ctx, g, groveTopology)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", copsev1alpha1.ReasonAllLevelsAvailable)))
		}).WithContext(ctx).WithTimeout(bindingReadyTimeout).Should(Succeed())

		By("every worker node has a value for each level's key")
		var nodes corev1.NodeList
		Expect(env.Client.List(ctx, &nodes, client.MatchingLabels{groveWorkerLabel: groveWorkerValue})).To(Succeed())
		Expect(nodes.Items).NotTo(BeEmpty(), "no worker nodes")
		for _, n := range nodes.Items {
			for _, l := range fleetLevels() {
				Expect(n.Labels[l.Key]).NotTo(BeEmpty(), "node %s has no %s label", n.Name, l.Key)
			}
		}
	})

	It("TAS2: cliques with different constraints are packed each at its own level", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-indep-clq.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 7)
		expectSameDomain(ctx, podsLabelled(pods, labels.PodCliqueKey, "tas-indep-clq-0-worker-rack"), 3, cluster.LabelRack)
		expectSameDomain(ctx, podsLabelled(pods, labels.PodCliqueKey, "tas-indep-clq-0-worker-block"), 4, cluster.LabelBlock)
		expectGangKey(ctx, ns, "tas-indep-clq-0", "")
	})

	It("TAS3: a constraint on the PodCliqueSet alone packs every pod of the replica", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-sl-pcs-only.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 4)
		expectSameDomain(ctx, pods, 4, cluster.LabelRack)
		expectGangKey(ctx, ns, "tas-sl-pcs-only-0", cluster.LabelRack)
	})

	It("TAS4: a constraint on the scaling group alone packs its pods", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-sl-pcsg-only.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 4)
		expectSameDomain(ctx, podsLabelled(pods, labels.ScalingGroupKey, "tas-sl-pcsg-only-0-workers"), 2, cluster.LabelRack)
		expectGangKey(ctx, ns, "tas-sl-pcsg-only-0", "")
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)
	})

	It("TAS5: a clique packed at host puts its pods on one node", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-host-level.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 2)
		expectSameDomain(ctx, pods, 2, cluster.LabelHostname)
		Expect(pods[0].Spec.NodeName).To(Equal(pods[1].Spec.NodeName), "pods not on the same node")
		expectGangKey(ctx, ns, "tas-host-level-0", "")
	})

	It("TAS6: a standalone clique under a zone constraint on the PodCliqueSet", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-standalone-pclq-only-pcs-zone.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 4)
		expectSameDomain(ctx, pods, 4, cluster.LabelZone)
		expectGangKey(ctx, ns, "tas-standalone-pclq-0", cluster.LabelZone)
	})

	It("TAS7: a gang without any topology constraint", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-no-constraint.yaml")
		groveReadyPods(ctx, ns, pcs, 4)
		expectGangKey(ctx, ns, "tas-no-constraint-0", "")
	})

	It("TAS8: a three-level hierarchy: block, each scaling-group replica's rack, each clique's host", func(ctx context.Context) {
		groveSchedulableNodes(ctx, workers, 8)
		ns, pcs := applyGrove(ctx, "tas-hierarchy.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 8)
		for j := range 2 {
			for _, clique := range []string{"prefill", "decode"} {
				expectSameDomain(ctx, podsLabelled(pods, labels.PodCliqueKey, fmt.Sprintf("tas-hierarchy-0-inference-group-%d-%s", j, clique)), 2, cluster.LabelHostname)
			}
		}
		expectGroupReplicasPacked(ctx, pods, "tas-hierarchy-0-inference-group", 2, 4, cluster.LabelRack)
		expectSameDomain(ctx, pods, 8, cluster.LabelBlock)
		expectGangKey(ctx, ns, "tas-hierarchy-0", cluster.LabelBlock)
	})

	It("TAS9: a block constraint on the PodCliqueSet and a host constraint on its clique", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-pcs-pclq.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 2)
		expectSameDomain(ctx, pods, 2, cluster.LabelHostname)
		expectGangKey(ctx, ns, "tas-pcs-pclq-0", cluster.LabelBlock)
	})

	It("TAS10: a scaling group's scaled gangs stay in the replica's block, each in a rack", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-pcsg-scale.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 6)
		expectGroupReplicasPacked(ctx, pods, "tas-pcsg-scale-0-inference-group", 3, 2, cluster.LabelRack)
		expectSameDomain(ctx, pods, 6, cluster.LabelBlock)
		expectGangKey(ctx, ns, "tas-pcsg-scale-0", cluster.LabelBlock)
		for _, j := range []int{1, 2} {
			expectGangKey(ctx, ns, fmt.Sprintf("tas-pcsg-scale-0-inference-group-%d", j), cluster.LabelRack)
		}
	})

	It("TAS11: a rack constraint on the scaling group and a host constraint on its clique, none on the PodCliqueSet", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-pcsg-pclq.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 4)
		expectGroupReplicasPacked(ctx, pods, "tas-pcsg-pclq-0-workers", 2, 2, cluster.LabelHostname)
		expectGangKey(ctx, ns, "tas-pcsg-pclq-0", "")
	})

	It("TAS12: ten scaling-group replicas, seven of them scaled gangs, all in the replica's block", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-large-scale.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 20)
		expectGroupReplicasPacked(ctx, pods, "tas-large-scale-0-workers", 10, 2, cluster.LabelHostname)
		expectSameDomain(ctx, pods, 20, cluster.LabelBlock)
		expectGangKey(ctx, ns, "tas-large-scale-0", cluster.LabelBlock)
		// The scaling group's constraint is null: a scaled gang takes the
		// PodCliqueSet's, as Grove's scaled PodGangs do.
		for j := 3; j < 10; j++ {
			expectGangKey(ctx, ns, fmt.Sprintf("tas-large-scale-0-workers-%d", j), cluster.LabelBlock)
		}
	})

	It("TAS13: a gang that fits in no rack stays wholly Pending, unschedulable", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-insuffic.yaml")
		By("every pod is Pending and marked unschedulable by the scheduler")
		Eventually(func(g Gomega) {
			pods := env.LivePods(ctx, g, ns, pcs)
			g.Expect(pods).To(HaveLen(10))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
				cond := podCondition(&p, corev1.PodScheduled)
				g.Expect(cond).NotTo(BeNil(), "pod %s has no PodScheduled condition", p.Name)
				g.Expect(cond.Status).To(Equal(corev1.ConditionFalse))
				g.Expect(cond.Reason).To(Equal(corev1.PodReasonUnschedulable))
			}
		}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
		By("no pod is bound: all or nothing")
		Consistently(func(g Gomega) {
			for _, p := range env.LivePods(ctx, g, ns, pcs) {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s was bound", p.Name)
			}
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
		expectGangKey(ctx, ns, "tas-insuffic-0", cluster.LabelRack)
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypePodGangsScheduled, metav1.ConditionFalse, copsev1alpha1.ReasonGangUnschedulable)
	})

	It("TAS14: each replica of a rack-packed PodCliqueSet in a rack", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-multirep.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 4)
		for r := range 2 {
			expectSameDomain(ctx, podsLabelled(pods, labels.ReplicaKey, fmt.Sprint(r)), 2, cluster.LabelRack)
			expectGangKey(ctx, ns, fmt.Sprintf("tas-multirep-%d", r), cluster.LabelRack)
		}
	})

	It("TAS15: disaggregated inference: two scaling groups and a router in one block, each group replica in a rack", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-pcs-multi-pcsg.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 10)
		expectSameDomain(ctx, pods, 10, cluster.LabelBlock)
		for _, group := range []string{"decoder", "prefill"} {
			expectGroupReplicasPacked(ctx, pods, "tas-pcs-multi-pcsg-0-"+group, 2, 2, cluster.LabelRack)
		}
		Expect(podsLabelled(pods, labels.PodCliqueKey, "tas-pcs-multi-pcsg-0-router")).To(HaveLen(2))
		expectGangKey(ctx, ns, "tas-pcs-multi-pcsg-0", cluster.LabelBlock)
		for _, group := range []string{"decoder", "prefill"} {
			expectGangKey(ctx, ns, "tas-pcs-multi-pcsg-0-"+group+"-1", cluster.LabelRack)
		}
	})

	It("TAS16: two replicas of a three-level hierarchy, each in a block of its own packing", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-pcs-multi-pcsg-multi-replica.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 20)
		for r := range 2 {
			replica := podsLabelled(pods, labels.ReplicaKey, fmt.Sprint(r))
			expectSameDomain(ctx, replica, 10, cluster.LabelBlock)
			for _, group := range []string{"decoder", "prefill"} {
				expectGroupReplicasPacked(ctx, replica, fmt.Sprintf("tas-pcs-multi-pcsg-%d-%s", r, group), 2, 2, cluster.LabelRack)
			}
			Expect(podsLabelled(replica, labels.PodCliqueKey, fmt.Sprintf("tas-pcs-multi-pcsg-%d-router", r))).To(HaveLen(2))
			expectGangKey(ctx, ns, fmt.Sprintf("tas-pcs-multi-pcsg-%d", r), cluster.LabelBlock)
		}
	})

	It("TAS17: two bindings name the same domain by different keys, for two kinds of nodes", func(ctx context.Context) {
		const gb200NodesPerBlock = 7
		h100, gb200 := workers[:14], workers[14:28]
		By("relabelling the GB200 half: no rack label, an NVLink block and domain instead")
		for i, name := range gb200 {
			relabelNode(ctx, name, map[string]*string{
				cluster.LabelRack:           nil,
				"example.com/nvl-block":     ptr.To(fmt.Sprintf("block-%d", i/gb200NodesPerBlock)),
				"example.com/nvlink-domain": ptr.To(fmt.Sprintf("nvl-domain-%d", i)),
			})
		}
		createBinding(ctx, "h100-topology", []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainBlock, Key: cluster.LabelRack},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}})
		createBinding(ctx, "gb200-topology", []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainBlock, Key: "example.com/nvl-block"},
			{Domain: grovecorev1alpha1.TopologyDomainRack, Key: "example.com/nvlink-domain"},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}})

		ns := groveNamespace(ctx)
		h100PCS := createGrove(ctx, ns, "tas-multi-topology-h100.yaml")
		gb200PCS := createGrove(ctx, ns, "tas-multi-topology-gb200.yaml")
		h100Pods := groveReadyPods(ctx, ns, h100PCS, 2)
		gb200Pods := groveReadyPods(ctx, ns, gb200PCS, 2)

		expectSameDomain(ctx, h100Pods, 2, cluster.LabelRack)
		expectSameDomain(ctx, gb200Pods, 2, "example.com/nvl-block")
		for _, p := range h100Pods {
			Expect(h100).To(ContainElement(p.Spec.NodeName), "H100 pod %s is not on an H100 node", p.Name)
		}
		for _, p := range gb200Pods {
			Expect(gb200).To(ContainElement(p.Spec.NodeName), "GB200 pod %s is not on a GB200 node", p.Name)
		}
	})

	It("TAS18: a reference to another scheduler's topology object is refused", func(ctx context.Context) {
		// Grove, running KAI, accepts a reference to a KAI Topology that does
		// not exist and reports SchedulerTopologyDrift. copse runs no KAI:
		// as Grove does for a backend it does not run, it refuses the
		// reference (docs/placement.md).
		b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "drift-detect-topo"}}
		b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
			{Domain: grovecorev1alpha1.TopologyDomainRack, Key: cluster.LabelRack},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}}
		b.Spec.SchedulerTopologyBindings = []grovecorev1alpha1.SchedulerTopologyBinding{
			{SchedulerName: "kai-scheduler", TopologyReference: "non-existent-kai-topo"}}
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, b), ctbWebhook,
			`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kai-scheduler": scheduler backend is not enabled`)
	})

	It("TAS19: a binding's levels change and it stays usable", func(ctx context.Context) {
		// Grove checks that KAI's Topology follows the binding; the
		// kube-scheduler has none, so the binding's own status is what
		// follows: Ready for the new levels, at the new generation.
		b := createBinding(ctx, "lifecycle-topo", []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}})
		Eventually(func(g Gomega) {
			g.Expect(readyOf(ctx, g, b.Name)).To(HaveField("Reason", copsev1alpha1.ReasonAllLevelsAvailable))
		}).WithContext(ctx).WithTimeout(bindingReadyTimeout).Should(Succeed())

		By("adding the rack level")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
			{Domain: grovecorev1alpha1.TopologyDomainRack, Key: cluster.LabelRack},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}}
		Expect(env.Client.Update(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &copsev1alpha1.ClusterTopologyBinding{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Generation).To(BeNumerically(">", 1))
			g.Expect(readyOf(ctx, g, b.Name)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", copsev1alpha1.ReasonAllLevelsAvailable)))
		}).WithContext(ctx).WithTimeout(bindingReadyTimeout).Should(Succeed())
	})

	It("TAS20: TopologyLevelsUnavailable is Unknown while the binding is gone, and pods created then are not packed", func(ctx context.Context) {
		groveSchedulableNodes(ctx, workers, 2)
		levels := []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
			{Domain: grovecorev1alpha1.TopologyDomainRack, Key: cluster.LabelRack},
			{Domain: grovecorev1alpha1.TopologyDomainHost, Key: cluster.LabelHostname}}
		b := createBinding(ctx, "tas20-topology", levels)
		ns, pcs := applyGrove(ctx, "tas-topology-condition.yaml")
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)

		By("deleting the binding")
		Expect(env.Client.Delete(ctx, b)).To(Succeed())
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionUnknown, copsev1alpha1.ReasonClusterTopologyNotFound)

		By("scaling to one replica while the binding is gone: its gang and pods carry no packing")
		scalePCS(ctx, ns, pcs, 1)
		groveReadyPods(ctx, ns, pcs, 2)
		expectGangKey(ctx, ns, "tas-topology-condition-0", "")
		pclq := &copsev1alpha1.PodClique{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tas-topology-condition-0-worker"}, pclq)).To(Succeed())
		Expect(pclq.Spec.PodSpec.Affinity.PodAffinity).To(BeNil(), "the PodClique's pods are packed")

		By("scaling back to zero")
		scalePCS(ctx, ns, pcs, 0)
		Eventually(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, pcs)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())

		By("creating the binding again")
		createBinding(ctx, "tas20-topology", levels)
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)
	})

	It("TAS21: the binding webhook refuses bad levels and scheduler references; a child constraint inherits the topologyName", func(ctx context.Context) {
		twoLevels := []grovecorev1alpha1.TopologyLevel{
			{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
			{Domain: grovecorev1alpha1.TopologyDomainRack, Key: cluster.LabelRack}}
		cases := []struct {
			name   string
			levels []grovecorev1alpha1.TopologyLevel
			refs   []grovecorev1alpha1.SchedulerTopologyBinding
			errs   []string
		}{
			{name: "tas21-invalid-topology",
				levels: []grovecorev1alpha1.TopologyLevel{
					{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelZone},
					{Domain: grovecorev1alpha1.TopologyDomainZone, Key: cluster.LabelRack}},
				errs: []string{"spec.levels[1].domain", "Duplicate value"}},
			{name: "tas22-duplicate-backend", levels: twoLevels,
				refs: []grovecorev1alpha1.SchedulerTopologyBinding{
					{SchedulerName: "kai-scheduler", TopologyReference: "kai-topology-a"},
					{SchedulerName: "kai-scheduler", TopologyReference: "kai-topology-b"}},
				errs: []string{"spec.schedulerTopologyBindings[1].schedulerName", "Duplicate value"}},
			{name: "tas22-unknown-backend", levels: twoLevels,
				refs: []grovecorev1alpha1.SchedulerTopologyBinding{{SchedulerName: "unknown-scheduler", TopologyReference: "topology"}},
				errs: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend is not enabled"}},
			{name: "tas22-non-tas-backend", levels: twoLevels,
				refs: []grovecorev1alpha1.SchedulerTopologyBinding{{SchedulerName: corev1.DefaultSchedulerName, TopologyReference: "default-topology"}},
				errs: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend takes no topology object"}},
		}
		for _, tc := range cases {
			By(tc.name)
			b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
			b.Spec.Levels, b.Spec.SchedulerTopologyBindings = tc.levels, tc.refs
			framework.ExpectAdmissionInvalid(env.Client.Create(ctx, b), ctbWebhook, tc.errs...)
		}

		By("a clique's constraint without a topologyName inherits the PodCliqueSet's")
		ns := groveNamespace(ctx)
		worker := framework.CliqueTemplate("worker", 1, framework.PodSpec(0))
		worker.Spec.RoleName, worker.Spec.MinAvailable = "worker-role", ptr.To[int32](1)
		worker.TopologyConstraint = packAt("", grovecorev1alpha1.TopologyDomainHost, "")
		pcs := framework.NewPodCliqueSet(ns, "tas21-pcs-optional-topology-name", 1, worker)
		pcs.Spec.Template.TopologyConstraint = packAt(groveTopology, grovecorev1alpha1.TopologyDomainZone, "")
		pcs.Labels = map[string]string{"kai.scheduler/queue": "test"}
		env.CreatePodCliqueSet(ctx, pcs, groveWait)
	})

	It("TAS22: the schema refuses topologyConstraint shapes without a usable pack", func(ctx context.Context) {
		ns := groveNamespace(ctx)
		newPCS := func(name string, tc *grovecorev1alpha1.TopologyConstraint) *copsev1alpha1.PodCliqueSet {
			worker := framework.CliqueTemplate("worker", 1, framework.PodSpec(0))
			worker.Spec.RoleName, worker.Spec.MinAvailable = "worker-role", ptr.To[int32](1)
			pcs := framework.NewPodCliqueSet(ns, name, 0, worker)
			pcs.Spec.Template.TopologyConstraint = tc
			pcs.Labels = map[string]string{"kai.scheduler/queue": "test"}
			return pcs
		}
		legacy := &grovecorev1alpha1.TopologyConstraint{TopologyName: groveTopology, PackDomain: grovecorev1alpha1.TopologyDomainHost}
		rack := packAt(groveTopology, grovecorev1alpha1.TopologyDomainRack, "")
		legacyClique := newPCS("tas22-legacy-pclq", rack)
		legacyClique.Spec.Template.Cliques[0].TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{PackDomain: grovecorev1alpha1.TopologyDomainHost}
		legacyGroup := newPCS("tas22-legacy-pcsg", rack)
		legacyGroup.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1),
			TopologyConstraint: &grovecorev1alpha1.TopologyConstraint{PackDomain: grovecorev1alpha1.TopologyDomainHost}}}
		cases := []struct {
			pcs  *copsev1alpha1.PodCliqueSet
			want string
		}{
			{newPCS("tas22-legacy-pcs", legacy), "packDomain is deprecated and cannot be used on new workloads; use pack.required"},
			{newPCS("tas22-missing-pack", &grovecorev1alpha1.TopologyConstraint{TopologyName: groveTopology}),
				"topologyConstraint must specify pack or deprecated packDomain"},
			{newPCS("tas22-empty-pack", &grovecorev1alpha1.TopologyConstraint{TopologyName: groveTopology, Pack: &grovecorev1alpha1.TopologyPackConstraint{}}),
				"pack must specify at least one of required or preferred"},
			{newPCS("tas22-ambiguous-pack", &grovecorev1alpha1.TopologyConstraint{TopologyName: groveTopology, PackDomain: grovecorev1alpha1.TopologyDomainHost,
				Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: grovecorev1alpha1.TopologyDomainHost}}),
				"must not set both pack.required and deprecated packDomain"},
			{legacyClique, "packDomain is deprecated and cannot be used on new workloads; use pack.required"},
			{legacyGroup, "packDomain is deprecated and cannot be used on new workloads; use pack.required"},
		}
		for _, tc := range cases {
			By(tc.pcs.Name)
			framework.ExpectAdmissionInvalid(env.Client.Create(ctx, tc.pcs), "", tc.want)
		}

		By("a preferred-only pack is accepted")
		env.CreatePodCliqueSet(ctx, newPCS("tas22-valid-preferred-only", packAt(groveTopology, "", grovecorev1alpha1.TopologyDomainHost)), groveWait)
	})

	It("TAS23: preferred packing: the scaled gang carries the scaling group's keys, not the PodCliqueSet's", func(ctx context.Context) {
		ns, pcs := applyGrove(ctx, "tas-preferred-pack.yaml")
		pods := groveReadyPods(ctx, ns, pcs, 3)
		By("the base gang is keyed at the PodCliqueSet's required block; it prefers a rack")
		expectGangKey(ctx, ns, "tas-preferred-pack-0", cluster.LabelBlock)
		for _, p := range podsLabelled(pods, labels.PodGangKey, "tas-preferred-pack-0") {
			Expect(preferredKeys(&p)).To(ContainElement(cluster.LabelRack), "pod %s does not prefer a rack", p.Name)
		}
		Expect(preferredKeys(&podsLabelled(pods, labels.PodCliqueKey, "tas-preferred-pack-0-router")[0])).To(ContainElement(cluster.LabelHostname))
		By("the scaled gang has no required key of its own, only the scaling group's preferred host")
		expectGangKey(ctx, ns, "tas-preferred-pack-0-workers-1", "")
		scaled := podsLabelled(pods, labels.PodGangKey, "tas-preferred-pack-0-workers-1")
		Expect(scaled).To(HaveLen(1))
		Expect(preferredKeys(&scaled[0])).To(ContainElement(cluster.LabelHostname))
		expectCondition(ctx, ns, pcs, copsev1alpha1.ConditionTypeTopologyLevelsUnavailable,
			metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable)
	})
})

// groveNamespace makes a namespace for one Grove test (Grove's run in
// "default", one at a time).
func groveNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := env.NewNamespace(ctx, "grove-tas")
	return ns
}

// applyGrove creates the PodCliqueSet of one of Grove's manifests in a new
// namespace and returns both names. After the spec the PodCliqueSet is
// deleted and its pods waited out, so the next test finds Grove's nodes free,
// as Grove's cleanup between tests does.
func applyGrove(ctx context.Context, file string) (namespace, pcs string) {
	GinkgoHelper()
	namespace = groveNamespace(ctx)
	return namespace, createGrove(ctx, namespace, file)
}

// createGrove creates the PodCliqueSet of one of Grove's manifests in
// namespace, deleted after the spec, and returns its name.
func createGrove(ctx context.Context, namespace, file string) string {
	GinkgoHelper()
	pcs, err := loadGroveManifest(file)
	Expect(err).NotTo(HaveOccurred())
	pcs.Namespace = namespace
	env.CreatePodCliqueSet(ctx, pcs, groveWait)
	return pcs.Name
}

// groveReadyPods waits until the PodCliqueSet has n pods, bound and Ready.
func groveReadyPods(ctx context.Context, namespace, pcs string, n int) []corev1.Pod {
	GinkgoHelper()
	return boundPods(ctx, namespace, pcs, n)
}

// groveSchedulableNodes leaves the first n of Grove's worker nodes
// schedulable and cordons the others until the spec ends, as Grove's tests
// size their cluster.
func groveSchedulableNodes(ctx context.Context, workers []string, n int) {
	GinkgoHelper()
	cordon := func(ctx context.Context, names []string, unschedulable bool) {
		patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, unschedulable)
		for _, name := range names {
			Expect(env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
				client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
		}
	}
	DeferCleanup(cordon, workers[n:], false)
	cordon(ctx, workers[n:], true)
}

// relabelNode sets (a value) or removes (nil) node labels until the spec
// ends, when each gets back the value it had.
func relabelNode(ctx context.Context, name string, changes map[string]*string) {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	restore := map[string]*string{}
	for key := range changes {
		if v, ok := node.Labels[key]; ok {
			restore[key] = ptr.To(v)
		} else {
			restore[key] = nil
		}
	}
	patch := func(ctx context.Context, set map[string]*string) {
		raw := map[string]any{}
		for k, v := range set {
			if v == nil {
				raw[k] = nil
			} else {
				raw[k] = *v
			}
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": raw}})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch("application/merge-patch+json", body))).To(Succeed())
	}
	DeferCleanup(patch, restore)
	patch(ctx, changes)
}

// scalePCS sets the PodCliqueSet's replicas.
func scalePCS(ctx context.Context, namespace, name string, replicas int32) {
	GinkgoHelper()
	Expect(env.Client.Patch(ctx, &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
		client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)))).To(Succeed())
}

// podsLabelled are the pods whose label key has value.
func podsLabelled(pods []corev1.Pod, key, value string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Labels[key] == value {
			out = append(out, p)
		}
	}
	return out
}

// expectSameDomain checks that there are n pods and that they are all in one
// domain of key, as Grove's VerifyPodsInSameTopologyDomain does.
func expectSameDomain(ctx context.Context, pods []corev1.Pod, n int, key string) {
	GinkgoHelper()
	Expect(pods).To(HaveLen(n))
	Expect(domainsOf(ctx, pods, key)).To(HaveLen(1), "%d pods in more than one domain of %s", n, key)
}

// expectGroupReplicasPacked checks each of a scaling group's replicas: its
// pods, podsPerReplica of them, in one domain of key (Grove's
// VerifyPCSGReplicasInTopologyDomain).
func expectGroupReplicasPacked(ctx context.Context, pods []corev1.Pod, scalingGroup string, replicas, podsPerReplica int, key string) {
	GinkgoHelper()
	inGroup := podsLabelled(pods, labels.ScalingGroupKey, scalingGroup)
	for j := range replicas {
		expectSameDomain(ctx, podsLabelled(inGroup, labels.ScalingGroupReplicaKey, fmt.Sprint(j)), podsPerReplica, key)
	}
}

// expectGangKey checks a gang's PodGroup topology key ("" for none): what
// copse asks the kube-scheduler where Grove checks its KAI PodGroup's
// required key.
func expectGangKey(ctx context.Context, namespace, gang, key string) {
	GinkgoHelper()
	pg := &schedulingv1beta1.PodGroup{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: gang}, pg)).To(Succeed())
	var got string
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		got = c.Topology[0].Key
	}
	Expect(got).To(Equal(key), "PodGroup %s topology key", gang)
}

// preferredKeys are the topology keys of a pod's preferred pod affinity terms.
func preferredKeys(pod *corev1.Pod) []string {
	var out []string
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for _, t := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			out = append(out, t.PodAffinityTerm.TopologyKey)
		}
	}
	return out
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
