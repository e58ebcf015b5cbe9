package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDefaultTopologyPlacements(t *testing.T) {
	got := DefaultTopology().Placements()
	if len(got) != 16 {
		t.Fatalf("default topology has %d nodes, want 16", len(got))
	}
	names := map[string]bool{}
	cliques := map[string]int{}
	for _, p := range got {
		if names[p.NodeName()] {
			t.Errorf("duplicate node name %s", p.NodeName())
		}
		names[p.NodeName()] = true
		cliques[p.CliqueName()]++
	}
	if len(cliques) != 4 {
		t.Errorf("got %d cliques, want 4 (one per rack): %v", len(cliques), cliques)
	}
	for c, n := range cliques {
		if n != 4 {
			t.Errorf("clique %s has %d nodes, want 4", c, n)
		}
	}
}

func TestPlacementNames(t *testing.T) {
	p := Placement{Zone: 1, Block: 2, Rack: 3, Index: 4}
	want := map[string]string{
		"zone":   "zone-1",
		"block":  "zone-1-block-2",
		"rack":   "zone-1-block-2-rack-3",
		"clique": "zone-1.block-2.rack-3",
		"node":   "gpu-z1-b2-r3-n4",
	}
	got := map[string]string{
		"zone": p.ZoneName(), "block": p.BlockName(), "rack": p.RackName(),
		"clique": p.CliqueName(), "node": p.NodeName(),
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s name = %q, want %q", k, got[k], w)
		}
	}
}

// Racks with the same index in different blocks (or zones) are different
// NVLink domains, so their label values must differ.
func TestLabelValuesUniqueAcrossParents(t *testing.T) {
	a := Placement{Zone: 0, Block: 0, Rack: 1}
	b := Placement{Zone: 0, Block: 1, Rack: 1}
	c := Placement{Zone: 1, Block: 0, Rack: 1}
	for _, pair := range [][2]Placement{{a, b}, {a, c}, {b, c}} {
		if pair[0].CliqueName() == pair[1].CliqueName() || pair[0].RackName() == pair[1].RackName() {
			t.Errorf("%+v and %+v share a rack or clique label", pair[0], pair[1])
		}
	}
	if a.BlockName() == c.BlockName() {
		t.Errorf("block 0 of zones 0 and 1 share the label %q", a.BlockName())
	}
}

func TestLabelsAreValid(t *testing.T) {
	p := Placement{Zone: 12, Block: 34, Rack: 56, Index: 789}
	for k, v := range p.Labels(DefaultNodeShape()) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("label key %q: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s value %q: %v", k, v, errs)
		}
	}
	if errs := validation.IsDNS1123Subdomain(p.NodeName()); len(errs) > 0 {
		t.Errorf("node name %q: %v", p.NodeName(), errs)
	}
}

func TestNodeObject(t *testing.T) {
	p := Placement{Zone: 0, Block: 1, Rack: 0, Index: 2}
	node, err := NodeObject(p, NodeShape{GPUs: 8}, "172.16.0.9")
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "gpu-z0-b1-r0-n2" {
		t.Errorf("name = %q", node.Name)
	}
	wantLabels := map[string]string{
		LabelZone:         "zone-0",
		LabelBlock:        "zone-0-block-1",
		LabelRack:         "zone-0-block-1-rack-0",
		LabelGPUClique:    "zone-0.block-1.rack-0",
		LabelHostname:     "gpu-z0-b1-r0-n2",
		LabelInstanceType: "sim-gb200",
		LabelType:         TypeKwok,
		LabelGPUCount:     "8",
	}
	for k, v := range wantLabels {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("node has taints %v; workloads must not need tolerations", node.Spec.Taints)
	}
	checks := map[corev1.ResourceName]int64{ResourceGPU: 8, corev1.ResourcePods: 110, corev1.ResourceCPU: 144}
	for name, want := range checks {
		for _, list := range []corev1.ResourceList{node.Status.Allocatable, node.Status.Capacity} {
			q := list[name]
			if q.Value() != want {
				t.Errorf("%s = %s, want %d", name, q.String(), want)
			}
		}
	}
	if got := node.Status.Addresses[0]; got.Type != corev1.NodeInternalIP || got.Address != "172.16.0.9" {
		t.Errorf("first address = %+v", got)
	}
}

func TestNodeObjectRejectsBadShape(t *testing.T) {
	if _, err := NodeObject(Placement{}, NodeShape{CPU: "lots"}, "172.16.0.1"); err == nil {
		t.Fatal("want an error for cpu \"lots\"")
	}
}

func TestMergeShape(t *testing.T) {
	got := mergeShape(NodeShape{GPUs: 2, InstanceType: "small"}, DefaultNodeShape())
	want := DefaultNodeShape()
	want.GPUs, want.InstanceType = 2, "small"
	if got != want {
		t.Errorf("mergeShape = %+v, want %+v", got, want)
	}
}

func TestFreeNodeIPs(t *testing.T) {
	got := freeNodeIPs(map[string]bool{"172.16.0.1": true, "172.16.0.3": true}, 3)
	want := []string{"172.16.0.2", "172.16.0.4", "172.16.0.5"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Crossing an octet boundary.
	if ips := freeNodeIPs(nil, 300); ips[299] != "172.16.1.44" {
		t.Errorf("300th address = %s, want 172.16.1.44", ips[299])
	}
}

func TestNodeIndex(t *testing.T) {
	for name, want := range map[string]int{"gpu-z0-b0-r0-n0": 0, "gpu-z1-b2-r3-n17": 17} {
		if got, ok := nodeIndex(name); !ok || got != want {
			t.Errorf("nodeIndex(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"control-plane", "gpu-z0-b0-r0-nx"} {
		if _, ok := nodeIndex(name); ok {
			t.Errorf("nodeIndex(%q) parsed a foreign name", name)
		}
	}
}
