package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/copse-dev/copse/e2e/process"
)

// A real node is a kubelet (v1.37, as the control plane) with containerd,
// runc and the bridge CNI plugin, all built from the module proxy, running
// real containers of images made here (images.go) on this machine, next to
// the kwok nodes. It exists for what kwok cannot show: the kubelet's half
// of a contract (exit codes and finishedAt as the kubelet writes them,
// downward-API files refreshed, termination grace, init containers).
//
// Each real node has its own directory (containerd's root and state, the
// kubelet's root, the CNI configuration and addresses, the pods' logs), its
// own cgroup root and its own bridge and pod subnet. It shares the host's
// network namespace: the kubelet reaches the API server on loopback and the
// API server reaches the kubelet on the host's address, with no routing to
// set up; each pod still gets a network namespace of its own from the CNI
// plugin. docs/local-cluster.md says what that means.

// Labels and taint of real nodes.
const (
	TypeReal = "real"
	// LabelRealNode is "true" on real nodes, and the key of their
	// NoSchedule taint: only a pod that tolerates it and selects it (see
	// RealNodePlacement) runs on a real node.
	LabelRealNode = "copse.dev/real-node"
)

// RealNodePlacement returns the node selector and toleration that put a
// pod on a real node.
func RealNodePlacement() (map[string]string, corev1.Toleration) {
	return map[string]string{LabelRealNode: "true"},
		corev1.Toleration{Key: LabelRealNode, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}

// realNodeState is what the cluster records of one real node, so that a
// later process (the CLI's down) can stop it and clean up after it.
type realNodeState struct {
	Name        string `json:"name"`
	Dir         string `json:"dir"`
	CgroupRoot  string `json:"cgroupRoot"`
	Bridge      string `json:"bridge"`
	PodSubnet   string `json:"podSubnet"`
	Socket      string `json:"socket"`
	KubeletPort int    `json:"kubeletPort"`
	HealthzPort int    `json:"healthzPort"`
}

// maxSocketPath is the longest path of a unix socket (sun_path less its
// terminating NUL).
const maxSocketPath = 107

// planRealNodes names n real nodes of the cluster in dir and picks what
// must not collide with another cluster's on the same host: cgroup roots,
// bridges and pod subnets are derived from the directory, ports are free.
func planRealNodes(dir string, n int) ([]realNodeState, error) {
	if n == 0 {
		return nil, nil
	}
	if n > 50 {
		return nil, fmt.Errorf("real nodes: %d asked for, at most 50", n)
	}
	sum := sha256.Sum256([]byte(dir))
	id := hex.EncodeToString(sum[:3])
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	nodes := make([]realNodeState, n)
	for i := range nodes {
		name := fmt.Sprintf("copse-real-%d", i)
		nodeDir := filepath.Join(dir, "realnodes", name)
		nodes[i] = realNodeState{
			Name:       name,
			Dir:        nodeDir,
			CgroupRoot: fmt.Sprintf("/copse-%s-%d", id, i),
			Bridge:     fmt.Sprintf("copse%s%d", id, i),
			// 10.200-249: clear of the kwok pods' 10.64.0.0/12 and the
			// services' 10.96.0.0/16.
			PodSubnet:   fmt.Sprintf("10.%d.%d.0/24", 200+i, sum[3]),
			Socket:      filepath.Join(nodeDir, "containerd.sock"),
			KubeletPort: ports[2*i], HealthzPort: ports[2*i+1],
		}
		if len(nodes[i].Socket)+len(".ttrpc") > maxSocketPath {
			return nil, fmt.Errorf("real nodes: the cluster directory %s is too long for containerd's socket (%s, at most %d bytes)",
				dir, nodes[i].Socket, maxSocketPath-len(".ttrpc"))
		}
	}
	return nodes, nil
}

// realNodeIdentity is the kubelet's API user: a node, so that the API
// server's Node authorizer and NodeRestriction admission treat it as they
// treat any kubelet.
func realNodeIdentity(name string) identity {
	return identity{user: "system:node:" + name, groups: []string{"system:nodes"}}
}

func realNodeIdentityKey(name string) string { return "kubelet-" + name }

// realNodeParts are the node's binaries.
type realNodeParts struct {
	kubelet, containerd, ctr, runc, cniBinDir string
	// path is the PATH containerd runs with: it starts its runc shim
	// (containerd-shim-runc-v2) from there.
	path string
}

func ensureRealNodeParts(ctx context.Context, out io.Writer) (realNodeParts, error) {
	built := map[string]BuiltTool{}
	for _, name := range RealNodeTools {
		t, err := EnsureTool(ctx, name, out)
		if err != nil {
			return realNodeParts{}, fmt.Errorf("real nodes: %w", err)
		}
		built[name] = t
	}
	containerd := built[ToolContainerd]
	return realNodeParts{
		kubelet:    built[ToolKubelet].Path("kubelet"),
		containerd: containerd.Path("containerd"),
		ctr:        containerd.Path("ctr"),
		runc:       built[ToolRunc].Path("runc"),
		cniBinDir:  built[ToolCNIPlugins].Dir,
		path:       strings.Join([]string{containerd.Dir, built[ToolRunc].Dir, os.Getenv("PATH")}, string(os.PathListSeparator)),
	}, nil
}

// startRealNodes starts the cluster's real nodes one after the other and
// waits until the API server has them Ready.
func (c *Cluster) startRealNodes(ctx context.Context, ids map[string]identity, timeout time.Duration) error {
	if len(c.state.RealNodes) == 0 {
		return nil
	}
	began := time.Now()
	parts, err := ensureRealNodeParts(ctx, c.out)
	if err != nil {
		return err
	}
	imageDir := filepath.Join(c.dir, "images")
	if err := os.MkdirAll(imageDir, 0o755); err != nil {
		return fmt.Errorf("real nodes: %w", err)
	}
	if c.state.NodeImages, err = buildNodeImages(ctx, imageDir, c.out); err != nil {
		return fmt.Errorf("real nodes: %w", err)
	}
	caPEM, err := os.ReadFile(c.layout.apiserverCA())
	if err != nil {
		return fmt.Errorf("real nodes: read the cluster CA: %w", err)
	}
	var names []string
	for _, n := range c.state.RealNodes {
		if err := c.startRealNode(ctx, n, parts, caPEM, ids[realNodeIdentityKey(n.Name)], timeout); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
	}
	if err := c.waitRealNodesReady(ctx, names, timeout); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%d real node(s) Ready after %s\n", len(names), time.Since(began).Round(100*time.Millisecond))
	return writeState(c.layout.state(), c.state)
}

func (c *Cluster) startRealNode(ctx context.Context, n realNodeState, parts realNodeParts, caPEM []byte, id identity, timeout time.Duration) error {
	if err := createCgroupRoot(n.CgroupRoot); err != nil {
		return err
	}
	files := realNodeFiles{realNodeState: n, Runc: parts.runc, CNIBinDir: parts.cniBinDir, PauseImage: c.state.NodeImages.Pause, TaintKey: LabelRealNode,
		RestrictOOMScoreAdj: !hasCapability(capSysResource)}
	if err := writeRealNodeFiles(files); err != nil {
		return err
	}
	if err := writeKubeconfig(n.kubeconfigPath(), c.state.APIServerURL, caPEM, id); err != nil {
		return err
	}
	containerd, err := c.start(process.Spec{
		Name: realNodeContainerd(n), Binary: parts.containerd,
		Args: []string{"--config", n.containerdConfigPath()},
		Env:  []string{"PATH=" + parts.path},
	})
	if err != nil {
		return err
	}
	if err := c.wait(ctx, containerd, criReady(n.Socket), timeout); err != nil {
		return err
	}
	for _, ref := range slices.Sorted(maps.Keys(c.state.NodeImages.Archives)) {
		if _, err := runIn(ctx, "", parts.ctr, "--address", n.Socket, "--namespace", "k8s.io",
			"images", "import", "--platform", "linux/"+runtime.GOARCH, c.state.NodeImages.Archives[ref]); err != nil {
			return fmt.Errorf("import image %s: %w", ref, err)
		}
	}
	kubelet, err := c.start(process.Spec{
		Name: realNodeKubelet(n), Binary: parts.kubelet,
		Args: []string{
			"--config=" + n.kubeletConfigPath(),
			"--kubeconfig=" + n.kubeconfigPath(),
			"--root-dir=" + n.kubeletRootDir(),
			"--hostname-override=" + n.Name,
			"--node-labels=" + LabelType + "=" + TypeReal + "," + LabelRealNode + "=true",
			"--v=2",
		},
	})
	if err != nil {
		return err
	}
	return c.wait(ctx, kubelet, httpProbe(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HealthzPort), "", "ok"), timeout)
}

func realNodeContainerd(n realNodeState) string { return "containerd-" + n.Name }
func realNodeKubelet(n realNodeState) string    { return "kubelet-" + n.Name }

// waitRealNodesReady waits until every named node is registered and Ready:
// the kubelet has found the runtime and the network ready.
func (c *Cluster) waitRealNodesReady(ctx context.Context, names []string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = fmt.Sprintf("node %s: %v", name, err)
				return false, nil
			}
			if !nodeReady(n) {
				last = fmt.Sprintf("node %s is not Ready", name)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if herr := c.CheckHealthy(); herr != nil {
			return herr
		}
		return fmt.Errorf("wait for real nodes Ready (%s; kubelet logs in %s): %w", last, filepath.Dir(c.logPath("kubelet")), err)
	}
	return nil
}

// RealNodeNames are the names of the cluster's real nodes.
func (c *Cluster) RealNodeNames() []string {
	names := make([]string, 0, len(c.state.RealNodes))
	for _, n := range c.state.RealNodes {
		names = append(names, n.Name)
	}
	return names
}

// NodeImages are the images the real nodes hold (zero without real nodes).
func (c *Cluster) NodeImages() NodeImages { return c.state.NodeImages }

// stopRealNodes stops every real node before the rest of the cluster, as a
// node is drained: the kubelet first (so that it restarts nothing), then
// every pod sandbox through the CRI (containers, networks, mounts and
// shims go), then containerd; then it removes what is left on the host
// outside the node's directory: processes in the node's cgroups, the
// cgroups, mounts, the bridge.
func (c *Cluster) stopRealNodes() error {
	c.procsMu.Lock()
	procs := slices.Clone(c.procs)
	c.procsMu.Unlock()
	find := func(name string) *process.Process {
		for i := len(procs) - 1; i >= 0; i-- {
			if procs[i].Name() == name {
				return procs[i]
			}
		}
		return nil
	}
	var errs []error
	for _, n := range c.state.RealNodes {
		if kubelet := find(realNodeKubelet(n)); kubelet != nil {
			errs = append(errs, kubelet.Stop(10*time.Second))
		}
		if containerd := find(realNodeContainerd(n)); containerd != nil {
			if ended, _ := containerd.Ended(); !ended {
				if err := removeAllSandboxes(context.Background(), n.Socket); err != nil {
					errs = append(errs, fmt.Errorf("real node %s: %w", n.Name, err))
				}
			}
			errs = append(errs, containerd.Stop(10*time.Second))
		}
		killProcessesNaming(n.Socket)
		errs = append(errs, removeCgroupRoot(n.CgroupRoot), unmountUnder(n.Dir), deleteLink(n.Bridge))
		removeLogLinks(n.Dir)
	}
	return errors.Join(errs...)
}

// killProcessesNaming kills every process whose command line contains arg:
// the runc shims of a containerd that died before its pods were removed
// (each names containerd's socket).
func killProcessesNaming(arg string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeLogLinks removes the kubelet's links in /var/log/containers (a
// path it does not let one configure) that point into the node's
// directory.
func removeLogLinks(dir string) {
	const containerLogs = "/var/log/containers"
	entries, _ := os.ReadDir(containerLogs)
	for _, e := range entries {
		link := filepath.Join(containerLogs, e.Name())
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, dir+"/") {
			_ = os.Remove(link)
		}
	}
}
