package placement_test

import (
	"context"
	"slices"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/trainjob"
)

const (
	// trainJobNodes whole GPU nodes (4 GPUs each) of a TrainJob; a rack
	// has 4 nodes.
	trainJobNodes = 3
	// trainJobWait bounds a TrainJob's way to bound pods (runtime snapshot,
	// backend object, gang placement).
	trainJobWait = 90 * time.Second
)

// packedRuntime is a TrainingRuntime with one trainer job "node" whose pods
// run until deleted, gang-scheduled on the Workload API with its trainer
// gang at level (a node label key), built into backend.
func packedRuntime(namespace string, backend trainerv1alpha1.RuntimeBackend, level string) *trainerv1alpha1.TrainingRuntime {
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers:                    []corev1.Container{{Name: trainjob.NodeName, Image: "registry.example/trainer:v1"}},
	}
	rt := &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "packed"}}
	rt.Spec.Backend = backend
	rt.Spec.MLPolicy = &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)}
	rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{
		TopologyConstraint: &trainerv1alpha1.WorkloadTopologyConstraint{Level: level}}}
	rt.Spec.Template.Spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{{
		Name: trainjob.NodeName,
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: trainjob.AncestorTrainer}},
			Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: pod}},
		},
	}}
	return rt
}

// wholeNodeTrainJob asks for nodes trainer nodes of 4 GPUs, a whole
// simulated node each.
func wholeNodeTrainJob(namespace, name string, nodes int32) *trainerv1alpha1.TrainJob {
	gpus := corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("4")}
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "packed", Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To(nodes),
				ResourcesPerNode: &corev1.ResourceRequirements{Requests: gpus, Limits: gpus}},
		},
	}
}

// createTrainJob creates a TrainJob, deleted with its pods after the spec
// so that its GPUs are free for the next.
func createTrainJob(ctx context.Context, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(tj.Namespace))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(trainJobWait).Should(Succeed())
	})
}

// leaveOneRack arranges the cluster so that only one rack can hold
// trainJobNodes whole-GPU pods, and that rack is the one a scheduler blind
// to racks likes least: in every other rack all but trainJobNodes-1 nodes
// have their GPUs taken, and every node of the last rack has most of its
// CPUs taken (the default scoring prefers the least allocated nodes). Pods
// placed without the rack constraint then spread over racks; with it they
// all land in the returned rack. The blocking pods are bound by nodeName,
// in a namespace of their own, and deleted after the spec.
func leaveOneRack(ctx context.Context) string {
	GinkgoHelper()
	ns := env.NewNamespace(ctx, "tj-topology-blockers")
	byRack := map[string][]string{}
	var racks []string
	for _, p := range env.Topology.Placements() {
		if _, seen := byRack[p.RackName()]; !seen {
			racks = append(racks, p.RackName())
		}
		byRack[p.RackName()] = append(byRack[p.RackName()], p.NodeName())
	}
	target := racks[len(racks)-1]
	block := func(node string, gpus int64, cpu string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "block-" + node}, Spec: framework.PodSpec(gpus)}
		pod.Spec.NodeName = node
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
	}
	for _, rack := range racks {
		nodes := byRack[rack]
		for i, node := range nodes {
			switch {
			case rack == target:
				block(node, 0, "100")
			case i < len(nodes)-(trainJobNodes-1):
				block(node, int64(env.Topology.Shape.GPUs), "1")
			}
		}
	}
	DeferCleanup(func(ctx context.Context) {
		Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(trainJobWait).Should(Succeed())
	})
	return target
}

// expectOneDomain waits until the namespace has want bound pods and checks,
// from the labels of their nodes, that they share one value of key, and
// returns it.
func expectOneDomain(ctx context.Context, namespace string, want int, key string) string {
	GinkgoHelper()
	var nodeNames []string
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
		nodeNames = nodeNames[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
				nodeNames = append(nodeNames, p.Spec.NodeName)
			}
		}
		g.Expect(nodeNames).To(HaveLen(want), "bound pods")
	}).WithTimeout(trainJobWait).Should(Succeed())
	domains := map[string][]string{}
	for _, name := range nodeNames {
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		value, ok := node.Labels[key]
		Expect(ok).To(BeTrue(), "node %s has no label %s", name, key)
		domains[value] = append(domains[value], name)
	}
	Expect(domains).To(HaveLen(1), "the trainer pods span %d domains of %s: %v", len(domains), key, domains)
	for value := range domains {
		return value
	}
	return ""
}

var _ = Describe("TrainJob topology level", Label("placement"), func() {
	var ns string

	BeforeEach(func(ctx context.Context) {
		ns = env.NewNamespace(ctx, "tj-topology")
	})

	It("packs the trainer gang into one rack on the JobSet backend, through the PodGroup's topology key", func(ctx context.Context) {
		rack := leaveOneRack(ctx)
		Expect(env.Client.Create(ctx, packedRuntime(ns, trainerv1alpha1.RuntimeBackendJobSet, cluster.LabelRack))).To(Succeed())
		tj := wholeNodeTrainJob(ns, "rack-jobset", trainJobNodes)
		createTrainJob(ctx, tj)

		By("the trainer PodGroup and its Workload template carry the key")
		podGroup := &schedulingv1beta1.PodGroup{}
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: trainjob.PodGroupName(tj, trainjob.TrainerGroup)}, podGroup)
		}).WithTimeout(trainJobWait).Should(Succeed())
		want := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelRack}}}
		Expect(podGroup.Spec.SchedulingConstraints).To(Equal(want))
		workload := &schedulingv1beta1.Workload{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.TrainJobWorkload(tj.Name)}, workload)).To(Succeed())
		Expect(workload.Spec.PodGroupTemplates).To(ConsistOf(HaveField("SchedulingConstraints", Equal(want))))

		By("every trainer pod on a node of the one rack that can hold them")
		Expect(expectOneDomain(ctx, ns, trainJobNodes, cluster.LabelRack)).To(Equal(rack))
	})

	It("packs the trainer into one rack on the PodCliqueSet backend, through a ClusterTopologyBinding's level", func(ctx context.Context) {
		createBinding(ctx, "tj-fleet", fleetLevels())
		rack := leaveOneRack(ctx)
		Expect(env.Client.Create(ctx, packedRuntime(ns, trainerv1alpha1.RuntimeBackendPodCliqueSet, cluster.LabelRack))).To(Succeed())
		tj := wholeNodeTrainJob(ns, "rack-pcs", trainJobNodes)
		createTrainJob(ctx, tj)

		By("the PodCliqueSet's template names the first binding with the key, at its level")
		pcs := &copsev1alpha1.PodCliqueSet{}
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs) }).WithTimeout(trainJobWait).Should(Succeed())
		first, domain := firstBindingWithKey(ctx, cluster.LabelRack)
		Expect(pcs.Spec.Template.TopologyConstraint).To(Equal(&grovecorev1alpha1.TopologyConstraint{TopologyName: first,
			Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: domain}}))

		By("the trainer's gang PodGroup carries the key")
		Eventually(func(g Gomega) {
			groups := &schedulingv1beta1.PodGroupList{}
			g.Expect(env.Client.List(ctx, groups, client.InNamespace(ns))).To(Succeed())
			var keys []string
			for _, pg := range groups.Items {
				if pg.Spec.SchedulingPolicy.Gang != nil && pg.Spec.SchedulingConstraints != nil {
					for _, c := range pg.Spec.SchedulingConstraints.Topology {
						keys = append(keys, c.Key)
					}
				}
			}
			g.Expect(keys).To(ConsistOf(cluster.LabelRack), "topology keys of the gang PodGroups")
		}).WithTimeout(trainJobWait).Should(Succeed())

		By("every trainer pod on a node of the one rack that can hold them")
		Expect(expectOneDomain(ctx, ns, trainJobNodes, cluster.LabelRack)).To(Equal(rack))
	})

	It("waits on the PodCliqueSet backend for a ClusterTopologyBinding with the level, saying so", func(ctx context.Context) {
		const key = "e2e.copse.dev/pod"
		Expect(env.Client.Create(ctx, packedRuntime(ns, trainerv1alpha1.RuntimeBackendPodCliqueSet, key))).To(Succeed())
		tj := wholeNodeTrainJob(ns, "waits", 1)
		createTrainJob(ctx, tj)

		By("TopologyLevelsUnavailable=True naming the field and the key, a Warning event, no PodCliqueSet")
		Eventually(func(g Gomega) {
			got := &trainerv1alpha1.TrainJob{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable)
			g.Expect(c).NotTo(BeNil(), "conditions: %v", got.Status.Conditions)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason))
			g.Expect(c.Message).To(ContainSubstring(`spec.podGroupPolicy.workload.topologyConstraint.level "` + key + `"`))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobFailed)).To(BeFalse())
			g.Expect(env.EventsWithReason(ctx, g, ns, trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason)).
				To(ContainElement(HaveField("Type", corev1.EventTypeWarning)))
		}).WithTimeout(trainJobWait).Should(Succeed())
		Consistently(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), &copsev1alpha1.PodCliqueSet{})
		}).WithTimeout(2 * time.Second).Should(MatchError(ContainSubstring("not found")))

		By("a binding with the key: the PodCliqueSet is built at its level and the condition turns False")
		createBinding(ctx, "tj-pods", append(fleetLevels()[:3], grovecorev1alpha1.TopologyLevel{Domain: "pod", Key: key}))
		pcs := &copsev1alpha1.PodCliqueSet{}
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs) }).WithTimeout(trainJobWait).Should(Succeed())
		Expect(pcs.Spec.Template.TopologyConstraint).To(HaveField("Pack.RequiredDomain", grovecorev1alpha1.TopologyDomain("pod")))
		Eventually(func(g Gomega) {
			got := &trainerv1alpha1.TrainJob{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable)).
				To(HaveField("Reason", trainerv1alpha1.TrainJobTopologyLevelResolvedReason))
		}).WithTimeout(trainJobWait).Should(Succeed())
	})

	It("keeps the placement a TrainJob on the PodCliqueSet backend started with: its binding deleted, it still suspends and resumes", func(ctx context.Context) {
		// First by name, so that the level resolves to this binding.
		binding := createBinding(ctx, "aaa-tj-kept", fleetLevels())
		Expect(env.Client.Create(ctx, packedRuntime(ns, trainerv1alpha1.RuntimeBackendPodCliqueSet, cluster.LabelRack))).To(Succeed())
		tj := wholeNodeTrainJob(ns, "kept", 2)
		createTrainJob(ctx, tj)
		pcs := &copsev1alpha1.PodCliqueSet{}
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs) }).WithTimeout(trainJobWait).Should(Succeed())
		packing := &grovecorev1alpha1.TopologyConstraint{TopologyName: binding.Name,
			Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
		Expect(pcs.Spec.Template.TopologyConstraint).To(Equal(packing))
		expectOneDomain(ctx, ns, 2, cluster.LabelRack)

		By("deleting the ClusterTopologyBinding its PodCliqueSet names")
		Expect(env.Client.Delete(ctx, binding)).To(Succeed())
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(binding), &copsev1alpha1.ClusterTopologyBinding{})
		}).WithTimeout(trainJobWait).Should(MatchError(ContainSubstring("not found")))

		By("suspending the TrainJob: the suspension reaches the PodCliqueSet and every pod goes")
		setTrainJobSuspend(ctx, tj, true)
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs)).To(Succeed())
			g.Expect(pcs.Spec.Suspend).To(HaveValue(BeTrue()))
		}).WithTimeout(trainJobWait).Should(Succeed())

		By("resuming it: pods run again, the PodCliqueSet's packing as it was created, the TrainJob never waiting for a binding")
		setTrainJobSuspend(ctx, tj, false)
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			running := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			g.Expect(running).To(Equal(2), "running pods")
		}).WithTimeout(trainJobWait).Should(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), pcs)).To(Succeed())
		Expect(pcs.Spec.Template.TopologyConstraint).To(Equal(packing))
		got := &trainerv1alpha1.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		Expect(meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobTopologyLevelsUnavailable)).To(BeNil())
		Expect(meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobFailed)).To(BeNil())
	})

	It("refuses a runtime whose topology level is not a node label key, naming the field", func(ctx context.Context) {
		err := env.Client.Create(ctx, packedRuntime(ns, trainerv1alpha1.RuntimeBackendJobSet, "not a key!"))
		framework.ExpectAdmissionInvalid(err, "", "spec.podGroupPolicy.workload.topologyConstraint.level",
			"level must be a node label key")
	})
})

// setTrainJobSuspend sets a TrainJob's spec.suspend.
func setTrainJobSuspend(ctx context.Context, tj *trainerv1alpha1.TrainJob, suspend bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		got.Spec.Suspend = ptr.To(suspend)
		g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	}).WithTimeout(trainJobWait).Should(Succeed())
}

// firstBindingWithKey is the ClusterTopologyBinding, first by name, with a
// level of key, and that level's domain.
func firstBindingWithKey(ctx context.Context, key string) (string, grovecorev1alpha1.TopologyDomain) {
	GinkgoHelper()
	list := &copsev1alpha1.ClusterTopologyBindingList{}
	Expect(env.Client.List(ctx, list)).To(Succeed())
	slices.SortFunc(list.Items, func(a, b copsev1alpha1.ClusterTopologyBinding) int { return strings.Compare(a.Name, b.Name) })
	for _, b := range list.Items {
		for _, l := range b.Spec.Levels {
			if l.Key == key {
				return b.Name, l.Domain
			}
		}
	}
	Fail("no ClusterTopologyBinding has a level with key " + key)
	return "", ""
}
