package placement_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const (
	pcsWebhook = "validate.podcliquesets.grove.io"
	ctbWebhook = "validate.clustertopologybindings.grove.io"
	// bindingReadyTimeout bounds the wait for the ClusterTopologyBinding
	// controller to react to a binding or a node label change.
	bindingReadyTimeout = 30 * time.Second
)

// fleetLevels are the simulated cluster's levels, as its nodes are labelled
// (e2e/cluster/topology.go).
func fleetLevels() []grovecorev1alpha1.TopologyLevel {
	return []grovecorev1alpha1.TopologyLevel{
		{Domain: "zone", Key: cluster.LabelZone},
		{Domain: "block", Key: cluster.LabelBlock},
		{Domain: "rack", Key: cluster.LabelRack},
		{Domain: "host", Key: cluster.LabelHostname},
	}
}

// createBinding creates a ClusterTopologyBinding, deleted after the spec.
func createBinding(ctx context.Context, name string, levels []grovecorev1alpha1.TopologyLevel) *copsev1alpha1.ClusterTopologyBinding {
	GinkgoHelper()
	return env.CreateClusterTopologyBinding(ctx, name, levels)
}

// readyOf reads a binding's Ready condition (nil while it has none).
func readyOf(ctx context.Context, g Gomega, name string) *metav1.Condition {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, b)).To(Succeed())
	ready := meta.FindStatusCondition(b.Status.Conditions, copsev1alpha1.ConditionTypeReady)
	if ready != nil {
		g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		g.Expect(b.Status.SchedulerTopologyStatuses).To(BeEmpty())
	}
	return ready
}

func constraint(name, required string) *grovecorev1alpha1.TopologyConstraint {
	return &grovecorev1alpha1.TopologyConstraint{TopologyName: name,
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: grovecorev1alpha1.TopologyDomain(required)}}
}

// packedSet is a PodCliqueSet with a standalone clique "leader" and a clique
// "worker" in scaling group "decode", with the given constraints on the
// template, the group and the worker clique (nil leaves one unset).
func packedSet(namespace, name string, template, group, worker *grovecorev1alpha1.TopologyConstraint) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewPodCliqueSet(namespace, name, 1,
		framework.CliqueTemplate("leader", 1, framework.PodSpec(0)), framework.CliqueTemplate("worker", 2, framework.PodSpec(0)))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}, TopologyConstraint: group}}
	pcs.Spec.Template.TopologyConstraint = template
	pcs.Spec.Template.Cliques[1].TopologyConstraint = worker
	return pcs
}

var _ = Describe("Topology API", Label("placement"), func() {
	var ns string

	BeforeEach(func(ctx context.Context) {
		ns = env.NewNamespace(ctx, "topo-api")
	})

	It("refuses a PodCliqueSet whose topologyConstraint does not resolve, naming the field", func(ctx context.Context) {
		createBinding(ctx, "api-fleet", fleetLevels())

		By("an unknown topologyName")
		err := env.Client.Create(ctx, packedSet(ns, "unknown", constraint("api-nowhere", "rack"), nil, nil))
		framework.ExpectAdmissionInvalid(err, pcsWebhook, `spec.template.topologyConstraint.topologyName: Not found: "api-nowhere"`)

		By("a level the binding lacks")
		err = env.Client.Create(ctx, packedSet(ns, "numa", constraint("api-fleet", "numa"), nil, nil))
		framework.ExpectAdmissionInvalid(err, pcsWebhook,
			`spec.template.topologyConstraint.pack.required: Unsupported value: "numa": supported values: "zone", "block", "rack", "host"`)

		By("a child broader than its parent")
		err = env.Client.Create(ctx, packedSet(ns, "broader", nil, constraint("api-fleet", "rack"), constraint("", "block")))
		framework.ExpectAdmissionInvalid(err, pcsWebhook,
			`spec.template.cliques[1].topologyConstraint.pack.required: Invalid value: "block": must be rack or narrower`)

		By("a constraint without a topologyName here or on a parent, as kubectl shows it")
		manifest := filepath.Join(GinkgoT().TempDir(), "pcs.yaml")
		Expect(os.WriteFile(manifest, []byte(`apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: nameless
  namespace: `+ns+`
spec:
  replicas: 1
  template:
    topologyConstraint:
      pack:
        required: rack
    cliques:
      - name: worker
        spec:
          roleName: worker
          replicas: 2
          podSpec:
            containers:
              - name: main
                image: example.com/app:1
`), 0o600)).To(Succeed())
		out, err := env.Kubectl(ctx, "create", "-f", manifest)
		Expect(err).To(HaveOccurred(), "kubectl create was admitted: %s", out)
		Expect(out).To(ContainSubstring(`The PodCliqueSet "nameless" is invalid: ` +
			"spec.template.topologyConstraint.topologyName: Required value: pack needs the name of a ClusterTopologyBinding"))

		for _, name := range []string{"unknown", "numa", "broader", "nameless"} {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &copsev1alpha1.PodCliqueSet{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PodCliqueSet %s: want NotFound, got %v", name, err)
		}
	})

	It("accepts a PodCliqueSet whose constraints resolve against a binding", func(ctx context.Context) {
		createBinding(ctx, "api-accepts", fleetLevels())
		pcs := packedSet(ns, "packed", constraint("api-accepts", "block"), constraint("", "rack"), constraint("", "host"))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(readyOf(ctx, g, "api-accepts")).To(HaveField("Reason", copsev1alpha1.ReasonAllLevelsAvailable))
		}).WithTimeout(bindingReadyTimeout).Should(Succeed())
	})

	It("reports a level no node carries until a node gets its key", func(ctx context.Context) {
		const key = "e2e.copse.dev/pdu"
		b := createBinding(ctx, "api-pdu", append(fleetLevels()[:3], grovecorev1alpha1.TopologyLevel{Domain: "pdu", Key: key}))

		By("Ready=False naming the level and its key, with a Warning event")
		Eventually(func(g Gomega) {
			ready := readyOf(ctx, g, b.Name)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(copsev1alpha1.ReasonLevelsUnavailable))
			g.Expect(ready.Message).To(ContainSubstring("pdu (" + key + ")"))
			g.Expect(ready.Message).NotTo(ContainSubstring(cluster.LabelRack))
		}).WithTimeout(bindingReadyTimeout).Should(Succeed())
		out, err := env.Kubectl(ctx, "get", "ct", b.Name)
		Expect(err).NotTo(HaveOccurred())
		// kubectl prints the first match of a column's JSONPath: the broadest level.
		Expect(out).To(MatchRegexp(`api-pdu\s+zone\s+False\s+LevelsUnavailable`))
		Eventually(func(g Gomega) {
			var found bool
			for _, ev := range bindingEvents(ctx, g, b) {
				found = found || (ev.Type == corev1.EventTypeWarning && ev.Reason == "LevelsUnavailable")
			}
			g.Expect(found).To(BeTrue(), "a Warning LevelsUnavailable event about the binding")
		}).WithTimeout(bindingReadyTimeout).Should(Succeed())

		By("Ready=True once a node carries the key")
		nodes := &corev1.NodeList{}
		Expect(env.Client.List(ctx, nodes, client.MatchingLabels{cluster.LabelType: cluster.TypeKwok})).To(Succeed())
		Expect(nodes.Items).NotTo(BeEmpty())
		node := &nodes.Items[0]
		setNodeLabel(ctx, node, key, "pdu-0")
		DeferCleanup(func(ctx context.Context) { setNodeLabel(ctx, node, key, "") })
		Eventually(func(g Gomega) {
			g.Expect(readyOf(ctx, g, b.Name)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", copsev1alpha1.ReasonAllLevelsAvailable)))
		}).WithTimeout(bindingReadyTimeout).Should(Succeed())

		By("Ready=False again once no node carries it")
		setNodeLabel(ctx, node, key, "")
		Eventually(func(g Gomega) {
			g.Expect(readyOf(ctx, g, b.Name)).To(HaveField("Reason", copsev1alpha1.ReasonLevelsUnavailable))
		}).WithTimeout(bindingReadyTimeout).Should(Succeed())
	})

	It("refuses a ClusterTopologyBinding with duplicate domains or keys, naming the field", func(ctx context.Context) {
		b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "api-duplicates"}}
		b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{
			{Domain: "rack", Key: cluster.LabelRack}, {Domain: "rack", Key: cluster.LabelHostname}, {Domain: "host", Key: cluster.LabelHostname}}
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, b), ctbWebhook,
			`spec.levels[1].domain: Duplicate value: "rack": spec.levels[0] has the same domain`,
			`spec.levels[2].key: Duplicate value: "kubernetes.io/hostname": spec.levels[1] has the same key`)

		By("a domain outside Grove's pattern is the CRD schema's to refuse")
		b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{{Domain: "Rack", Key: cluster.LabelRack}}
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, b), "", "spec.levels[0].domain")
	})
})

// bindingEvents lists the events about a binding; a cluster-scoped object's
// events are in namespace default.
func bindingEvents(ctx context.Context, g Gomega, b *copsev1alpha1.ClusterTopologyBinding) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range env.EventsWithReason(ctx, g, metav1.NamespaceDefault, "LevelsUnavailable") {
		if ev.Regarding.Kind == "ClusterTopologyBinding" && ev.Regarding.Name == b.Name {
			out = append(out, ev)
		}
	}
	return out
}

// setNodeLabel sets a node label, or removes it when value is "".
func setNodeLabel(ctx context.Context, node *corev1.Node, key, value string) {
	GinkgoHelper()
	var patch []byte
	if value == "" {
		patch = []byte(`{"metadata":{"labels":{"` + key + `":null}}}`)
	} else {
		patch = []byte(`{"metadata":{"labels":{"` + key + `":"` + value + `"}}}`)
	}
	Expect(env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}},
		client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}
