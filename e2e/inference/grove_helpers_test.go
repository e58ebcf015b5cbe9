package inference_test

// Helpers of the ports of Grove's e2e scenarios (grove_*_test.go): the
// workload shapes Grove's scenarios use, built in Go, and nodes of their own
// for the scenarios that play with capacity.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

const (
	groveWait = 2 * time.Minute
	// groveTerminationDelay stands for the 10s of Grove's *-gt workloads:
	// shorter, to keep the suite quick; the scenarios only need the breach
	// to outlast it.
	groveTerminationDelay = 4 * time.Second
	// groveGrace is how long a "nothing happens" check watches after the
	// delay has passed (Grove waits 15s).
	groveGrace = 4 * time.Second
)

// groveShape is the workload of Grove's scenarios (workload1..6 in Grove's
// operator/e2e/yaml): a standalone clique pc-a of 2 pods and a scaling
// group sg-x of 2 replicas, each one pc-b pod and three pc-c pods — 10 pods
// per PodCliqueSet replica. The fields are the minAvailable values that tell
// the workloads apart.
type groveShape struct {
	minA, minC, minGroup int32
	// startup and startsAfter: cliqueStartupType, and per clique its
	// startsAfter (Explicit).
	startup     *grovecorev1alpha1.CliqueStartupType
	startsAfter map[string][]string
	// terminationDelay, when set, is the template's terminationDelay.
	terminationDelay time.Duration
}

var (
	// Grove's workload1: every clique and the group need all their pods.
	groveFull = groveShape{minA: 2, minC: 3, minGroup: 2}
	// Grove's workload2: one pod of each clique and one group replica.
	groveMin = groveShape{minA: 1, minC: 1, minGroup: 1}
	// Grove's workload5-gt: as workload2 but pc-c needs its three pods.
	groveMinStrictC = groveShape{minA: 1, minC: 3, minGroup: 1}
)

// groveWorkload builds the PodCliqueSet of shape s; pod is the pod spec of
// every clique (resources, node selection).
func groveWorkload(namespace, name string, s groveShape, pod corev1.PodSpec) *copsev1alpha1.PodCliqueSet {
	clique := func(cliqueName string, replicas, minAvailable int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
		c := framework.CliqueTemplate(cliqueName, replicas, *pod.DeepCopy())
		c.Spec.MinAvailable = ptr.To(minAvailable)
		c.Spec.StartsAfter = s.startsAfter[cliqueName]
		return c
	}
	pcs := framework.NewPodCliqueSet(namespace, name, 1,
		clique("pc-a", 2, s.minA), clique("pc-b", 1, 1), clique("pc-c", 3, s.minC))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "sg-x", CliqueNames: []string{"pc-b", "pc-c"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To(s.minGroup),
	}}
	pcs.Spec.Template.StartupType = s.startup
	if s.terminationDelay > 0 {
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: s.terminationDelay}
	}
	return pcs
}

// privateRack is a rack of simulated nodes that only the spec's pods use: a
// taint keeps every other pod off them, so the spec controls capacity by
// cordoning, as Grove's scenarios do on nodes that hold one pod each.
type privateRack struct {
	nodes []string
	taint corev1.Taint
	rack  string
}

var rackCounter atomic.Int32

// newPrivateRack adds count nodes of 4 GPUs in a rack of their own (block
// 40 upwards, far from the suite's topology), all cordoned, and removes them
// when the spec ends.
func newPrivateRack(ctx context.Context, count int) *privateRack {
	GinkgoHelper()
	n := int(rackCounter.Add(1))
	nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 40 + n, Rack: 0, Count: count})
	Expect(err).NotTo(HaveOccurred())
	r := &privateRack{nodes: nodes, taint: corev1.Taint{Key: "copse.dev/grove-scenario", Value: fmt.Sprint(n), Effect: corev1.TaintEffectNoSchedule}}
	for _, name := range nodes {
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		patch := client.MergeFrom(node.DeepCopy())
		node.Spec.Taints = append(node.Spec.Taints, r.taint)
		node.Spec.Unschedulable = true
		Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
		r.rack = node.Labels[cluster.LabelRack]
	}
	DeferCleanup(func(ctx context.Context) {
		Expect(env.Cluster.RemoveNodes(ctx, r.nodes...)).To(Succeed())
	})
	return r
}

// podSpec is a pod that takes a whole node of the rack (4 GPUs), as the
// pods of Grove's scenarios take a whole node (80Mi of a node's 150Mi).
func (r *privateRack) podSpec() corev1.PodSpec {
	spec := framework.PodSpec(4)
	spec.NodeSelector = map[string]string{cluster.LabelRack: r.rack}
	spec.Tolerations = []corev1.Toleration{{Key: r.taint.Key, Operator: corev1.TolerationOpEqual, Value: r.taint.Value, Effect: r.taint.Effect}}
	return spec
}

// uncordon makes n more of the rack's nodes schedulable, in order.
func (r *privateRack) uncordon(ctx context.Context, n int) {
	GinkgoHelper()
	done := 0
	for _, name := range r.nodes {
		if done == n {
			return
		}
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		if !node.Spec.Unschedulable {
			continue
		}
		setCordoned(ctx, name, false)
		done++
	}
	Expect(done).To(Equal(n), "the rack has fewer cordoned nodes than asked")
}

func setCordoned(ctx context.Context, nodeName string, cordoned bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
		patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
		node.Spec.Unschedulable = cordoned
		g.Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// podCounts are a PodCliqueSet's live pods: all, bound to a node, Ready.
type podCounts struct{ total, bound, ready int }

func countPods(pods []corev1.Pod) podCounts {
	var c podCounts
	for i := range pods {
		c.total++
		if pods[i].Spec.NodeName != "" {
			c.bound++
		}
		if framework.IsReady(&pods[i]) {
			c.ready++
		}
	}
	return c
}

// expectPods waits until the PodCliqueSet has total live pods of which
// ready are Ready and the others are not bound to a node, then checks for a
// few seconds that no further pod is bound (the scheduler saw them and
// left them Pending: no partial gang).
func expectPods(ctx context.Context, namespace, pcsName string, total, ready int) {
	GinkgoHelper()
	want := podCounts{total: total, bound: ready, ready: ready}
	Eventually(func(g Gomega) {
		g.Expect(countPods(env.LivePods(ctx, g, namespace, pcsName))).To(Equal(want))
	}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
	if ready == total {
		return
	}
	expectJudgedUnschedulable(ctx, namespace, pcsName)
	Consistently(func(g Gomega) {
		g.Expect(countPods(env.LivePods(ctx, g, namespace, pcsName))).To(Equal(want))
	}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// expectJudgedUnschedulable waits until the scheduler has tried every gang
// with unbound pods and found it unschedulable.
func expectJudgedUnschedulable(ctx context.Context, namespace, pcsName string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		waiting := map[string]bool{}
		for _, p := range env.LivePods(ctx, g, namespace, pcsName) {
			if p.Spec.NodeName == "" && p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil {
				waiting[*p.Spec.SchedulingGroup.PodGroupName] = true
			}
		}
		for name := range waiting {
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg)).To(Succeed())
			cond := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
			g.Expect(cond).NotTo(BeNil(), "PodGroup %s not judged yet", name)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "PodGroup %s", name)
		}
	}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())
}

// expectDistinctNodes checks that no two pods share a node.
func expectDistinctNodes(ctx context.Context, namespace, pcsName string) {
	GinkgoHelper()
	seen := map[string]string{}
	for _, p := range env.LivePods(ctx, Default, namespace, pcsName) {
		Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound", p.Name)
		Expect(seen).NotTo(HaveKey(p.Spec.NodeName), "pods %s and %s share node %s", seen[p.Spec.NodeName], p.Name, p.Spec.NodeName)
		seen[p.Spec.NodeName] = p.Name
	}
}

// scaleReplicas sets spec.replicas of a PodCliqueSet or a
// PodCliqueScalingGroup, as Grove's scenarios do.
func scaleReplicas(ctx context.Context, obj client.Object, replicas int32) {
	GinkgoHelper()
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
}

func pcsRef(namespace, name string) *copsev1alpha1.PodCliqueSet {
	return &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func pcsgRef(namespace, name string) *copsev1alpha1.PodCliqueScalingGroup {
	return &copsev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// podsOfClique lists the live pods of one PodClique.
func podsOfClique(ctx context.Context, g Gomega, namespace, pcsName, pclq string) []corev1.Pod {
	return env.LivePods(ctx, g, namespace, pcsName, client.MatchingLabels{labels.PodCliqueKey: pclq})
}
