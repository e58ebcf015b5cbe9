package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// The configuration files of one real node, all under its directory: a
// real node shares the host's network namespace and filesystem with every
// other process, so that everything it would keep in /var/lib, /run or
// /etc/cni is its own here, and two nodes (or two clusters) never meet.

// containerdConfig is containerd's configuration (version 3, containerd
// 2.x): its CRI plugin runs pods with runc and the bridge CNI network, and
// pins the sandbox image made here, which it must never try to pull.
// restrict_oom_score_adj is set where the host withholds CAP_SYS_RESOURCE
// from root (sandboxed machines, this project's CI among them): the kubelet
// asks for an OOM score below containerd's own (-998 for sandboxes), which
// only that capability may set, and runc would fail every pod.
var containerdConfig = template.Must(template.New("containerd").Parse(`version = 3
root = "{{.Dir}}/containerd/root"
state = "{{.Dir}}/containerd/state"

[grpc]
  address = "{{.Socket}}"

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "{{.PauseImage}}"
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = {{.RestrictOOMScoreAdj}}
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "{{.Runc}}"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["{{.CNIBinDir}}"]
      conf_dir = "{{.Dir}}/cni/net.d"
      max_conf_num = 1
`))

// cniConfig is the node's pod network: a bridge of its own with the node's
// pod subnet, the node's side of it as the pods' gateway. No masquerading
// and no port maps: the pods of these tests talk to nothing outside the
// node, and neither needs iptables.
var cniConfig = template.Must(template.New("cni").Parse(`{
  "cniVersion": "1.0.0",
  "name": "copse-real-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.Bridge}}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{.PodSubnet}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "{{.Dir}}/cni/ipam"
      }
    }
  ]
}
`))

// kubeletConfig is the kubelet's configuration. What differs from the
// kubelet's defaults, and why:
//   - failCgroupV1: false, because hosts of this kind have cgroup v1, which
//     the 1.37 kubelet refuses unless told (v1 is deprecated, not removed);
//   - cgroupRoot of its own, so that two kubelets on one host never clean up
//     each other's pod cgroups;
//   - ports picked free, the read-only port off, and the API server
//     trusted without a webhook (it reaches the kubelet only for logs and
//     exec, and the cluster is a test cluster on one machine);
//   - image garbage collection off and eviction only when a disk is
//     nearly full: the images cannot be pulled again, and a shared CI disk
//     is often fuller than the defaults allow;
//   - the pods' logs under the node's directory.
//
// Sync and status periods are the kubelet's defaults: the specs measure what
// a real node does, including how long it takes to refresh a downward-API
// file.
var kubeletConfig = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: "{{.CgroupRoot}}"
cgroupsPerQOS: true
containerRuntimeEndpoint: "unix://{{.Socket}}"
port: {{.KubeletPort}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.HealthzPort}}
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
failSwapOn: false
podLogsDir: "{{.Dir}}/pod-logs"
maxPods: 32
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
registerWithTaints:
- key: {{.TaintKey}}
  value: "true"
  effect: NoSchedule
`))

// realNodeFiles are the values the templates fill in.
type realNodeFiles struct {
	realNodeState
	Runc, CNIBinDir, PauseImage, TaintKey string
	RestrictOOMScoreAdj                   bool
}

func (n realNodeState) containerdConfigPath() string { return filepath.Join(n.Dir, "containerd.toml") }
func (n realNodeState) kubeletConfigPath() string    { return filepath.Join(n.Dir, "kubelet.yaml") }
func (n realNodeState) kubeconfigPath() string       { return filepath.Join(n.Dir, "kubeconfig") }
func (n realNodeState) kubeletRootDir() string       { return filepath.Join(n.Dir, "kubelet") }

// writeRealNodeFiles writes the node's containerd, CNI and kubelet
// configuration and creates the directories they name.
func writeRealNodeFiles(f realNodeFiles) error {
	for _, d := range []string{"containerd/root", "containerd/state", "cni/net.d", "cni/ipam", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(f.Dir, d), 0o755); err != nil {
			return fmt.Errorf("real node %s: %w", f.Name, err)
		}
	}
	for _, file := range []struct {
		path string
		tmpl *template.Template
	}{
		{f.containerdConfigPath(), containerdConfig},
		{filepath.Join(f.Dir, "cni", "net.d", "10-copse.conflist"), cniConfig},
		{f.kubeletConfigPath(), kubeletConfig},
	} {
		var b bytes.Buffer
		if err := file.tmpl.Execute(&b, f); err != nil {
			return fmt.Errorf("real node %s: %s: %w", f.Name, file.tmpl.Name(), err)
		}
		if err := os.WriteFile(file.path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("real node %s: %w", f.Name, err)
		}
	}
	return nil
}
