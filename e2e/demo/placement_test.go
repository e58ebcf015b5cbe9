package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

func gpuPod(name, node string, podLabels map[string]string, computeDomain string) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: name, Labels: podLabels}}
	pod.Spec.NodeName = node
	pod.Spec.Containers = []corev1.Container{{Name: "node", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("4")}}}}
	if computeDomain != "" {
		mnnvl.AddClaim(&pod.Spec, computeDomain)
	}
	return pod
}

func TestPlacementsRender(t *testing.T) {
	nodes := map[string]corev1.Node{}
	for _, p := range demoFleet().Placements() {
		nodes[p.NodeName()] = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.NodeName(), Labels: p.Labels(demoFleet().Shape)}}
	}
	pretrain := map[string]string{labels.PartOfKey: "gpt-pretrain"}
	cpu := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "router-0", Labels: map[string]string{labels.PartOfKey: "chat"}},
		Spec: corev1.PodSpec{NodeName: "gpu-z0-b0-r0-n5", Containers: []corev1.Container{{Name: "router"}}}}

	landed := placements{}
	landed.record([]corev1.Pod{
		gpuPod("gpt-pretrain-0-node-1", "gpu-z0-b1-r0-n3", pretrain, "gpt-pretrain-0-nvl72"),
		gpuPod("gpt-pretrain-0-node-0", "gpu-z0-b1-r0-n2", pretrain, "gpt-pretrain-0-nvl72"),
		gpuPod("bert-node-0-0", "gpu-z0-b0-r1-n0", map[string]string{jobSetNameLabel: "bert"}, ""),
		gpuPod("unbound", "", pretrain, "gpt-pretrain-0-nvl72"),
		cpu,
	}, nodes)
	// A later sighting of a pod already recorded (it has since been deleted).
	landed.record([]corev1.Pod{gpuPod("bert-node-1-0", "gpu-z0-b1-r1-n0", map[string]string{jobSetNameLabel: "bert"}, "")}, nodes)

	got := landed.render()
	for _, want := range []string{
		"bert: 2 pods in 2 NVLink domains, 2 blocks; ComputeDomains: -",
		"gpt-pretrain: 2 pods in 1 NVLink domain, 1 block; ComputeDomains: gpt-pretrain-0-nvl72",
		"gpt-pretrain  gpt-pretrain-0-node-0  gpu-z0-b1-r0-n2  zone-0-block-1  zone-0.block-1.rack-0  gpt-pretrain-0-nvl72",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("render lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"unbound", "router-0"} {
		if strings.Contains(got, absent) {
			t.Errorf("render shows %s, which is unbound or not a GPU pod:\n%s", absent, got)
		}
	}
	if i, j := strings.Index(got, "gpt-pretrain-0-node-0"), strings.Index(got, "gpt-pretrain-0-node-1"); i > j {
		t.Errorf("pods not sorted by name:\n%s", got)
	}
}
