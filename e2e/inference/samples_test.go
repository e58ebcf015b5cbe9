package inference_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// samplesDir holds Grove's sample manifests, byte for byte (PROVENANCE.md).
const samplesDir = "testdata/grove-samples"

// sampleWant is the state Grove's user guide describes for a sample: its
// PodCliques (name: pods), its PodCliqueScalingGroups (name: replicas) and,
// for the explicit-startup samples, which cliques start after which.
type sampleWant struct {
	pcs     string
	cliques map[string]int32
	groups  map[string]int32
	// startsAfter: clique template name -> the cliques it starts after.
	startsAfter map[string][]string
	// groupMinAvailable: scaling group template name -> minAvailable, for
	// the start order (default 1).
	groupMinAvailable map[string]int
}

// groveSamples is keyed by the path under samplesDir. Every file there must
// have an entry (TestEveryGroveSampleIsChecked).
var groveSamples = map[string]sampleWant{
	"simple/simple1.yaml": {pcs: "simple1",
		cliques: map[string]int32{"simple1-0-pca": 3, "simple1-0-pcd": 2, "simple1-0-sga-0-pcb": 2, "simple1-0-sga-0-pcc": 2},
		groups:  map[string]int32{"simple1-0-sga": 1}},
	"simple/simple2-explicit-startup-order.yaml": {pcs: "simple2",
		cliques:     map[string]int32{"simple2-0-pca": 3, "simple2-0-pcb": 2, "simple2-0-pcc": 2, "simple2-0-pcd": 2},
		startsAfter: map[string][]string{"pcb": {"pca"}, "pcc": {"pca"}, "pcd": {"pcb", "pcc"}}},
	"simple/simple3-explicit-startup-order.yaml": {pcs: "simple3",
		cliques: map[string]int32{"simple3-0-pca": 3, "simple3-0-pce": 2,
			"simple3-0-sga-0-pcb": 2, "simple3-0-sga-0-pcc": 2, "simple3-0-sga-0-pcd": 2,
			"simple3-0-sga-1-pcb": 2, "simple3-0-sga-1-pcc": 2, "simple3-0-sga-1-pcd": 2,
			"simple3-0-sga-2-pcb": 2, "simple3-0-sga-2-pcc": 2, "simple3-0-sga-2-pcd": 2},
		groups:            map[string]int32{"simple3-0-sga": 3},
		startsAfter:       map[string][]string{"pcb": {"pca"}, "pcc": {"pca"}, "pcd": {"pcb", "pcc"}, "pce": {"pcb", "pcc"}},
		groupMinAvailable: map[string]int{"sga": 2}},
	"user-guide/01_core-concepts/complete-inference-pipeline.yaml": {pcs: "comp-inf-ppln",
		cliques: map[string]int32{"comp-inf-ppln-0-frontend": 2, "comp-inf-ppln-0-vision-encoder": 1,
			"comp-inf-ppln-0-prefill-0-pleader": 1, "comp-inf-ppln-0-prefill-0-pworker": 4,
			"comp-inf-ppln-0-decode-cluster-0-dleader": 1, "comp-inf-ppln-0-decode-cluster-0-dworker": 2},
		groups: map[string]int32{"comp-inf-ppln-0-prefill": 1, "comp-inf-ppln-0-decode-cluster": 1}},
	"user-guide/01_core-concepts/multi-node-aggregated.yaml": {pcs: "multinode-aggregated",
		cliques: map[string]int32{"multinode-aggregated-0-model-instance-0-leader": 1, "multinode-aggregated-0-model-instance-0-worker": 3,
			"multinode-aggregated-0-model-instance-1-leader": 1, "multinode-aggregated-0-model-instance-1-worker": 3},
		groups: map[string]int32{"multinode-aggregated-0-model-instance": 2}},
	"user-guide/01_core-concepts/multi-node-disaggregated.yaml": {pcs: "multinode-disaggregated",
		cliques: map[string]int32{"multinode-disaggregated-0-prefill-0-pleader": 1, "multinode-disaggregated-0-prefill-0-pworker": 4,
			"multinode-disaggregated-0-prefill-1-pleader": 1, "multinode-disaggregated-0-prefill-1-pworker": 4,
			"multinode-disaggregated-0-decode-0-dleader": 1, "multinode-disaggregated-0-decode-0-dworker": 2},
		groups: map[string]int32{"multinode-disaggregated-0-prefill": 2, "multinode-disaggregated-0-decode": 1}},
	"user-guide/01_core-concepts/single-node-aggregated.yaml": {pcs: "single-node-aggregated",
		cliques: map[string]int32{"single-node-aggregated-0-model-worker": 2}},
	"user-guide/01_core-concepts/single-node-disaggregated.yaml": {pcs: "single-node-disaggregated",
		cliques: map[string]int32{"single-node-disaggregated-0-prefill": 3, "single-node-disaggregated-0-decode": 2}},
	"user-guide/02_pod-and-resource-naming-conventions/multinode-disaggregated-with-frontend.yaml": {pcs: "mn-disagg",
		cliques: map[string]int32{"mn-disagg-0-frontend": 2,
			"mn-disagg-0-prefill-0-pleader": 1, "mn-disagg-0-prefill-0-pworker": 3,
			"mn-disagg-0-prefill-1-pleader": 1, "mn-disagg-0-prefill-1-pworker": 3,
			"mn-disagg-0-decode-0-dleader": 1, "mn-disagg-0-decode-0-dworker": 2},
		groups: map[string]int32{"mn-disagg-0-prefill": 2, "mn-disagg-0-decode": 1}},
	"user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml": {pcs: "env-demo-pcsg",
		cliques: map[string]int32{"env-demo-pcsg-0-model-instance-0-leader": 1, "env-demo-pcsg-0-model-instance-0-worker": 3,
			"env-demo-pcsg-0-model-instance-1-leader": 1, "env-demo-pcsg-0-model-instance-1-worker": 3},
		groups: map[string]int32{"env-demo-pcsg-0-model-instance": 2}},
	"user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml": {pcs: "env-demo-standalone",
		cliques: map[string]int32{"env-demo-standalone-0-frontend": 2}},
}

// readSample decodes the objects of a sample manifest, unchanged.
func readSample(rel string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, rel))
	if err != nil {
		return nil, fmt.Errorf("read sample %s: %w", rel, err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode sample %s: %w", rel, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// Grove's samples (operator/samples) applied as they are: each must reach
// the state Grove's user guide describes. The only change is the namespace,
// the spec's own; the samples name no scheduler and ask for no GPUs, and
// the simulated nodes pull no image, so nothing else is substituted.
var _ = Describe("Grove samples", Label("inference"), Ordered, ContinueOnFailure, func() {
	var namespace string

	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "grove-samples")
		for rel := range groveSamples {
			objs, err := readSample(rel)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).To(HaveLen(1), "%s holds one PodCliqueSet", rel)
			for _, obj := range objs {
				obj.SetNamespace(namespace)
				Expect(env.Client.Create(ctx, obj)).To(Succeed(), "apply %s", rel)
			}
		}
	})

	for _, rel := range slices.Sorted(maps.Keys(groveSamples)) {
		want := groveSamples[rel]
		It("runs "+rel+" as Grove's user guide describes", func(ctx context.Context) {
			expectSampleState(ctx, namespace, want)
		})
	}
})

var podNameSuffix = regexp.MustCompile(`^-[a-z0-9]{5}$`)

// expectSampleState checks a running sample: its PodCliques, scaling groups
// and Ready pods, named as Grove names them, with Grove's discovery
// variables, started in the order the sample asks for.
func expectSampleState(ctx context.Context, namespace string, want sampleWant) {
	GinkgoHelper()
	total := 0
	for _, n := range want.cliques {
		total += int(n)
	}
	pods := env.ReadyPods(ctx, namespace, want.pcs, total, groveWait)

	var cliques copsev1alpha1.PodCliqueList
	Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: want.pcs})).To(Succeed())
	got := map[string]int32{}
	for _, pclq := range cliques.Items {
		got[pclq.Name] = pclq.Spec.Replicas
	}
	Expect(got).To(Equal(want.cliques))

	var groups copsev1alpha1.PodCliqueScalingGroupList
	Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: want.pcs})).To(Succeed())
	gotGroups := map[string]int32{}
	for _, g := range groups.Items {
		gotGroups[g.Name] = g.Spec.Replicas
	}
	if want.groups == nil {
		want.groups = map[string]int32{}
	}
	Expect(gotGroups).To(Equal(want.groups))

	Eventually(func(g Gomega) {
		g.Expect(env.GetPodCliqueSet(ctx, g, namespace, want.pcs).Status.AvailableReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(groveWait).Should(Succeed())

	hostnames := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		pclq := p.Labels[labels.PodCliqueKey]
		Expect(want.cliques).To(HaveKey(pclq), "pod %s", p.Name)
		Expect(p.Name[:len(pclq)]).To(Equal(pclq), "pod %s is named after its PodClique", p.Name)
		Expect(podNameSuffix.MatchString(p.Name[len(pclq):])).To(BeTrue(), "pod %s: <podclique>-<5 random characters>", p.Name)
		index := p.Labels[labels.PodIndexKey]
		hostname := pclq + "-" + index
		Expect(p.Spec.Hostname).To(Equal(hostname))
		Expect(hostnames).NotTo(HaveKey(hostname))
		hostnames[hostname] = true
		vars := discoveryVars(p)
		Expect(vars).To(HaveKeyWithValue("GROVE_PCS_NAME", want.pcs))
		Expect(vars).To(HaveKeyWithValue("GROVE_PCS_INDEX", "0"))
		Expect(vars).To(HaveKeyWithValue("GROVE_PCLQ_NAME", pclq))
		Expect(vars).To(HaveKeyWithValue("GROVE_PCLQ_POD_INDEX", index))
		Expect(vars).To(HaveKeyWithValue("GROVE_HEADLESS_SERVICE", fmt.Sprintf("%s-0.%s.svc.cluster.local", want.pcs, namespace)))
		if group := p.Labels[labels.ScalingGroupKey]; group != "" {
			Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_NAME", group))
			Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_INDEX", p.Labels[labels.ScalingGroupReplicaKey]))
			Expect(vars).To(HaveKeyWithValue("GROVE_PCSG_TEMPLATE_NUM_PODS", strconv.Itoa(groupTemplatePods(want, group))))
		} else {
			Expect(vars).NotTo(HaveKey("GROVE_PCSG_NAME"))
		}
	}

	for successor, predecessors := range sampleStartOrder(want, pods) {
		for _, pred := range predecessors {
			before := podsOfPodClique(pods, pred.name)
			Expect(len(before)).To(BeNumerically(">=", pred.minAvailable))
			nth := readyTimes(before)[pred.minAvailable-1]
			first := readyTimes(podsOfPodClique(pods, successor))[0]
			Expect(first).NotTo(BeTemporally("<", nth), "%s was Ready before %d pod(s) of %s were", successor, pred.minAvailable, pred.name)
		}
	}
}

// groupTemplatePods is how many pods one replica of a scaling group has:
// GROVE_PCSG_TEMPLATE_NUM_PODS.
func groupTemplatePods(want sampleWant, group string) int {
	n := 0
	for name, pods := range want.cliques {
		if len(name) > len(group)+3 && name[:len(group)+3] == group+"-0-" {
			n += int(pods)
		}
	}
	return n
}

type predecessor struct {
	name         string
	minAvailable int
}

// sampleStartOrder is, per PodClique, the PodCliques it starts after, as
// Grove resolves startsAfter: a clique of a scaling-group replica beyond the
// group's minAvailable waits only for its own replica's cliques; every other
// clique waits for a standalone predecessor and for every instance of a
// grouped one below the group's minAvailable.
func sampleStartOrder(want sampleWant, pods []corev1.Pod) map[string][]predecessor {
	type where struct {
		template, group string
		groupReplica    int
	}
	at := map[string]where{}
	templateGroup := map[string]string{}
	for _, p := range pods {
		w := where{template: p.Labels[labels.CliqueTemplateKey]}
		if g := p.Labels[labels.ScalingGroupKey]; g != "" {
			w.group = g[len(want.pcs)+3:] // "<pcs>-0-<group>"
			w.groupReplica, _ = labels.Index(p.Labels, labels.ScalingGroupReplicaKey)
			templateGroup[w.template] = w.group
		}
		at[p.Labels[labels.PodCliqueKey]] = w
	}
	groupMin := func(group string) int {
		if n, ok := want.groupMinAvailable[group]; ok {
			return n
		}
		return 1
	}
	out := map[string][]predecessor{}
	for pclq, w := range at {
		for _, pred := range want.startsAfter[w.template] {
			predGroup := templateGroup[pred]
			var names []string
			switch {
			case w.group != "" && w.groupReplica >= groupMin(w.group):
				if predGroup == w.group {
					names = append(names, fmt.Sprintf("%s-0-%s-%d-%s", want.pcs, w.group, w.groupReplica, pred))
				}
			case predGroup == "":
				names = append(names, fmt.Sprintf("%s-0-%s", want.pcs, pred))
			default:
				for j := range groupMin(predGroup) {
					names = append(names, fmt.Sprintf("%s-0-%s-%d-%s", want.pcs, predGroup, j, pred))
				}
			}
			for _, name := range names {
				// The samples set no minAvailable on cliques: all pods.
				out[pclq] = append(out[pclq], predecessor{name: name, minAvailable: int(want.cliques[name])})
			}
		}
	}
	return out
}

func podsOfPodClique(pods []corev1.Pod, pclq string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Labels[labels.PodCliqueKey] == pclq {
			out = append(out, p)
		}
	}
	return out
}

// discoveryVars are the GROVE_* variables of a pod's first container, with
// a value read from the pod's own labels resolved as the kubelet would.
func discoveryVars(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	fromLabel := regexp.MustCompile(`^metadata\.labels\['(.+)'\]$`)
	for _, e := range pod.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			if m := fromLabel.FindStringSubmatch(e.ValueFrom.FieldRef.FieldPath); m != nil {
				out[e.Name] = pod.Labels[m[1]]
			} else if e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
				out[e.Name] = pod.Name
			}
		}
	}
	return out
}
