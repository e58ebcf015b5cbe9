package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// jobSetNameLabel names a JobSet-backend TrainJob's pods' JobSet (the TrainJob).
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// landing is where the kube-scheduler bound one GPU pod of a sample.
type landing struct {
	workload, pod, node string
	// block and nvlink are the node's topology.copse.dev/block and
	// nvidia.com/gpu.clique labels.
	block, nvlink string
	// computeDomain is the ComputeDomain whose channel the pod claims
	// (MNNVL), "" if none.
	computeDomain string
}

// placements remembers every GPU pod the demo saw bound, by namespace/name:
// finished samples' pods are deleted, so the demo records them as it goes.
type placements map[string]landing

// record adds the bound GPU pods among pods; nodes are the cluster's nodes
// by name.
func (p placements) record(pods []corev1.Pod, nodes map[string]corev1.Node) {
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || !mnnvl.RequestsGPUs(&pod.Spec) {
			continue
		}
		node := nodes[pod.Spec.NodeName]
		p[pod.Namespace+"/"+pod.Name] = landing{
			workload:      workloadOf(pod),
			pod:           pod.Name,
			node:          pod.Spec.NodeName,
			block:         node.Labels[cluster.LabelBlock],
			nvlink:        node.Labels[cluster.LabelGPUClique],
			computeDomain: computeDomainOf(pod),
		}
	}
}

// workloadOf names the sample a pod belongs to: its PodCliqueSet (also a
// PodCliqueSet-backend TrainJob's name) or its JobSet (a JobSet-backend
// TrainJob's name).
func workloadOf(pod corev1.Pod) string {
	if name := pod.Labels[labels.PartOfKey]; name != "" {
		return name
	}
	if name := pod.Labels[jobSetNameLabel]; name != "" {
		return name
	}
	return pod.Name
}

// computeDomainOf is the ResourceClaimTemplate (named as its ComputeDomain)
// of the pod's MNNVL claim.
func computeDomainOf(pod corev1.Pod) string {
	for _, claim := range pod.Spec.ResourceClaims {
		if claim.Name == mnnvl.ClaimName && claim.ResourceClaimTemplateName != nil {
			return *claim.ResourceClaimTemplateName
		}
	}
	return ""
}

// render prints, per sample, how many NVLink domains and blocks its GPU pods
// span, then where each pod landed.
func (p placements) render() string {
	byWorkload := map[string][]landing{}
	for _, l := range p {
		byWorkload[l.workload] = append(byWorkload[l.workload], l)
	}
	names := make([]string, 0, len(byWorkload))
	for name := range byWorkload {
		names = append(names, name)
	}
	sort.Strings(names)

	var b strings.Builder
	b.WriteString("Where the GPU pods landed (NVLink domain = nvidia.com/gpu.clique, one GB200 NVL72 rack):\n")
	for _, name := range names {
		ls := byWorkload[name]
		sort.Slice(ls, func(i, j int) bool { return ls[i].pod < ls[j].pod })
		nvlinks, blocks, domains := distinct(ls, func(l landing) string { return l.nvlink }),
			distinct(ls, func(l landing) string { return l.block }), distinct(ls, func(l landing) string { return l.computeDomain })
		fmt.Fprintf(&b, "  %s: %s in %s, %s; ComputeDomains: %s\n", name, plural(len(ls), "pod"),
			plural(len(nvlinks), "NVLink domain"), plural(len(blocks), "block"), orDash(strings.Join(domains, ", ")))
	}
	b.WriteString("\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  WORKLOAD\tPOD\tNODE\tBLOCK\tNVLINK DOMAIN\tCOMPUTEDOMAIN")
	for _, name := range names {
		for _, l := range byWorkload[name] {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", l.workload, l.pod, l.node, l.block, l.nvlink, orDash(l.computeDomain))
		}
	}
	_ = w.Flush()
	return b.String()
}

// distinct lists the non-empty values of key over ls, sorted.
func distinct(ls []landing, key func(landing) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range ls {
		if v := key(l); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
