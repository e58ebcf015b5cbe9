package cluster

import (
	"archive/tar"
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestPlanRealNodes(t *testing.T) {
	nodes, err := planRealNodes("/tmp/copse-cluster-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	other, err := planRealNodes("/tmp/copse-cluster-2", 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	kwokPods, services := netip.MustParsePrefix(podCIDR), netip.MustParsePrefix(serviceCIDR)
	for i, n := range append(nodes, other...) {
		for _, unique := range []string{n.CgroupRoot, n.Bridge, n.PodSubnet} {
			if seen[unique] && i < len(nodes) {
				t.Errorf("node %d: %q is used twice", i, unique)
			}
			seen[unique] = true
		}
		if len(n.Bridge) > 15 {
			t.Errorf("bridge %q is longer than an interface name may be", n.Bridge)
		}
		subnet, err := netip.ParsePrefix(n.PodSubnet)
		if err != nil || subnet.Overlaps(kwokPods) || subnet.Overlaps(services) {
			t.Errorf("pod subnet %s: %v, or it overlaps the kwok pods' or the services' range", n.PodSubnet, err)
		}
		if !strings.HasPrefix(n.Socket, n.Dir+"/") || n.KubeletPort == 0 || n.HealthzPort == 0 || n.KubeletPort == n.HealthzPort {
			t.Errorf("node %+v", n)
		}
	}
	if nodes[0].Bridge == other[0].Bridge || nodes[0].CgroupRoot == other[0].CgroupRoot {
		t.Errorf("two clusters share a bridge or cgroup root: %+v and %+v", nodes[0], other[0])
	}
	if nodes[1].Name != "copse-real-1" {
		t.Errorf("name %q", nodes[1].Name)
	}
	if none, err := planRealNodes("/tmp/x", 0); err != nil || none != nil {
		t.Errorf("no real nodes: %v, %v", none, err)
	}
	if _, err := planRealNodes("/tmp/"+strings.Repeat("d", 100), 1); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("a directory too long for the socket: %v", err)
	}
}

// The node's files render with its values, and the kubelet's parses as
// YAML with the settings a real node depends on.
func TestWriteRealNodeFiles(t *testing.T) {
	dir := t.TempDir()
	nodes, err := planRealNodes(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if err := writeRealNodeFiles(realNodeFiles{realNodeState: n, Runc: "/bin/runc", CNIBinDir: "/cni", PauseImage: "copse.dev/e2e/pause:abc", TaintKey: LabelRealNode, RestrictOOMScoreAdj: true}); err != nil {
		t.Fatal(err)
	}
	containerd, err := os.ReadFile(n.containerdConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`address = "` + n.Socket + `"`, `sandbox = "copse.dev/e2e/pause:abc"`, `BinaryName = "/bin/runc"`,
		`bin_dirs = ["/cni"]`, `restrict_oom_score_adj = true`, `root = "` + n.Dir + `/containerd/root"`} {
		if !strings.Contains(string(containerd), want) {
			t.Errorf("containerd configuration lacks %s:\n%s", want, containerd)
		}
	}
	var kubelet map[string]any
	data, err := os.ReadFile(n.kubeletConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kubelet); err != nil {
		t.Fatalf("kubelet configuration: %v\n%s", err, data)
	}
	for key, want := range map[string]any{
		"failCgroupV1": false, "cgroupDriver": "cgroupfs", "cgroupRoot": n.CgroupRoot,
		"containerRuntimeEndpoint": "unix://" + n.Socket, "port": float64(n.KubeletPort), "healthzPort": float64(n.HealthzPort),
		"readOnlyPort": float64(0), "imageGCHighThresholdPercent": float64(100),
	} {
		if kubelet[key] != want {
			t.Errorf("kubelet %s = %v, want %v", key, kubelet[key], want)
		}
	}
	taints, _ := kubelet["registerWithTaints"].([]any)
	if len(taints) != 1 || taints[0].(map[string]any)["key"] != LabelRealNode {
		t.Errorf("kubelet taints %v", kubelet["registerWithTaints"])
	}
	cni, err := os.ReadFile(filepath.Join(n.Dir, "cni", "net.d", "10-copse.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := yaml.Unmarshal(cni, &conf); err != nil || !strings.Contains(string(cni), n.PodSubnet) || !strings.Contains(string(cni), n.Bridge) {
		t.Errorf("CNI configuration (%v):\n%s", err, cni)
	}
}

// An image layer is the same bytes for the same files (so an unchanged
// program keeps its image tag), with parents before children and links as
// links.
func TestLayerArchive(t *testing.T) {
	dir := t.TempDir()
	program := filepath.Join(dir, "program")
	if err := os.WriteFile(program, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []imageFile{
		{path: "/usr/local/bin/copse-workload", source: program, mode: 0o755},
		{path: "/bin/sh", link: "busybox"},
		{path: "/tmp", dir: true, mode: 0o1777},
	}
	first, err := layerArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := layerArchive(files)
	if !bytes.Equal(first, again) {
		t.Error("the same files made two different layers")
	}
	var entries []string
	tr := tar.NewReader(bytes.NewReader(first))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, h.Name+"|"+h.Linkname)
		if !h.ModTime.IsZero() && h.ModTime.Unix() != 0 {
			t.Errorf("%s has a modification time", h.Name)
		}
	}
	want := "usr/||usr/local/||usr/local/bin/||usr/local/bin/copse-workload||bin/||bin/sh|busybox|tmp/|"
	if got := strings.Join(entries, "|"); got != want {
		t.Errorf("entries %s, want %s", got, want)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/kubelet`:          `/var/lib/kubelet`,
		`/tmp/a\040b`:               `/tmp/a b`,
		`/tmp/tab\011and\134slash`:  "/tmp/tab\tand\\slash",
		`/tmp/not-an-escape\04`:     `/tmp/not-an-escape\04`,
		`/tmp/not-octal\09912/done`: `/tmp/not-octal\09912/done`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRealNodeSupportCanBeTurnedOff(t *testing.T) {
	t.Setenv(EnvRealNodes, "off")
	if err := RealNodeSupport(); err == nil || !strings.Contains(err.Error(), EnvRealNodes+"=off") {
		t.Errorf("RealNodeSupport() = %v, want the reason naming %s", err, EnvRealNodes)
	}
}
