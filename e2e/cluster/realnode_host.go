package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a real node needs of its host, and how it cleans up after itself:
// the node's cgroups, the mounts the kubelet and containerd made under its
// directory, and its bridge.

// EnvRealNodes set to "off" makes RealNodeSupport refuse, so that a
// machine that could run real nodes can run the suites as one that cannot
// (and the skip be seen).
const EnvRealNodes = "COPSE_REAL_NODES"

// RealNodeSupport says why this host cannot run real nodes, or nil if it
// can: root (the kubelet, containerd and runc mount filesystems and make
// namespaces and cgroups), cgroups (v1 with the cpu, memory and pids
// controllers, or v2), overlayfs (containerd's snapshotter), iproute2's ip
// (to remove a node's bridge), and apt (EnsureDebianPackage); then it tries
// what a node does to its host (probeRealNodeHost).
func RealNodeSupport() error {
	if v := os.Getenv(EnvRealNodes); v == "off" {
		return fmt.Errorf("real nodes are turned off (%s=off)", EnvRealNodes)
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("real nodes need Linux, this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("real nodes need root: the kubelet, containerd and runc mount filesystems and create namespaces and cgroups")
	}
	if _, err := cgroupHierarchies(); err != nil {
		return err
	}
	filesystems, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("real nodes: read /proc/filesystems: %w", err)
	}
	if !slices.ContainsFunc(strings.Split(string(filesystems), "\n"), func(l string) bool { return strings.HasSuffix(l, "\toverlay") }) {
		return errors.New("real nodes need overlayfs (containerd's snapshotter); the kernel does not list it in /proc/filesystems")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("real nodes need iproute2's ip to remove a node's bridge: %w", err)
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("real nodes need Debian's packages libseccomp-dev and busybox-static, fetched with apt (a Debian or Ubuntu host): %w", err)
		}
	}
	return probeRealNodeHost()
}

// probeRealNodeHost tries, and undoes, what a real node does to its host:
// a cgroup in every hierarchy, an overlay mount, a bridge, and the
// namespaces runc makes for a container. Root with every file in place may
// still be refused these (a sandboxed machine); it is then a host that
// cannot run real nodes, said here, rather than a cluster that fails to
// start.
func probeRealNodeHost() error {
	id := fmt.Sprintf("copse-probe-%d", os.Getpid())
	if err := createCgroupRoot("/" + id); err != nil {
		_ = removeCgroupRoot("/" + id)
		return fmt.Errorf("real nodes need to create cgroups: %w", err)
	}
	if err := removeCgroupRoot("/" + id); err != nil {
		return fmt.Errorf("real nodes need to remove cgroups: %w", err)
	}
	dir, err := os.MkdirTemp("", id)
	if err != nil {
		return fmt.Errorf("real node probe: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("real node probe: %w", err)
		}
	}
	options := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", dir, dir, dir)
	if err := syscall.Mount("overlay", filepath.Join(dir, "merged"), "overlay", 0, options); err != nil {
		return fmt.Errorf("real nodes need overlay mounts (containerd's snapshotter): %w", err)
	}
	_ = syscall.Unmount(filepath.Join(dir, "merged"), syscall.MNT_DETACH)
	bridge := fmt.Sprintf("cprobe%d", os.Getpid()%100000000)
	if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
		return fmt.Errorf("real nodes need to create a bridge for their pods: ip link add: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := deleteLink(bridge); err != nil {
		return fmt.Errorf("real node probe: %w", err)
	}
	if unshare, err := exec.LookPath("unshare"); err == nil {
		if out, err := exec.Command(unshare, "--fork", "--pid", "--mount", "--net", "--ipc", "--uts", "true").CombinedOutput(); err != nil {
			return fmt.Errorf("real nodes need the namespaces runc makes for a container: unshare: %w: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// hasCapability says whether this process holds capability bit cap in its
// effective set (/proc/self/status).
func hasCapability(capBit uint) bool {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if hexCaps, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hexCaps), 16, 64)
			return err == nil && caps&(1<<capBit) != 0
		}
	}
	return false
}

// capSysResource is CAP_SYS_RESOURCE's bit.
const capSysResource = 24

// cgroupHierarchies are the mount points of the host's cgroup hierarchies
// a node's cgroup root is made in: every v1 hierarchy, or the one v2
// hierarchy. A hybrid host (v1 controllers, cgroup2 mounted beside them
// without controllers) is a v1 host to the kubelet and runc.
func cgroupHierarchies() ([]string, error) {
	var v1, v2 []string
	for _, m := range mountInfo() {
		switch m.fsType {
		case "cgroup":
			v1 = append(v1, m.mountPoint)
		case "cgroup2":
			v2 = append(v2, m.mountPoint)
		}
	}
	if len(v1) > 0 {
		for _, need := range []string{"cpu", "memory", "pids"} {
			if !slices.ContainsFunc(v1, func(p string) bool { return slices.Contains(strings.Split(filepath.Base(p), ","), need) }) {
				return nil, fmt.Errorf("real nodes need the %s cgroup controller; this host's cgroup v1 hierarchies are %s", need, strings.Join(v1, ", "))
			}
		}
		return v1, nil
	}
	if slices.Contains(v2, "/sys/fs/cgroup") {
		return []string{"/sys/fs/cgroup"}, nil
	}
	return nil, errors.New("real nodes need cgroups: neither cgroup v1 controllers nor cgroup v2 is mounted at /sys/fs/cgroup")
}

// createCgroupRoot makes the node's cgroup root in every hierarchy; the
// kubelet refuses a cgroupRoot that does not exist. A v1 cpuset cgroup
// starts with no CPUs and no memory nodes, so it gets its parent's.
func createCgroupRoot(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			value, err := os.ReadFile(filepath.Join(h, file))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, file), value, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: copy %s: %w", dir, file, err)
			}
		}
		if h == "/sys/fs/cgroup" {
			// cgroup v2: the kubelet creates its cgroups below the root
			// and needs the controllers handed down to them.
			controllers, _ := os.ReadFile(filepath.Join(h, "cgroup.controllers"))
			var enable []string
			for _, c := range strings.Fields(string(controllers)) {
				enable = append(enable, "+"+c)
			}
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
				return fmt.Errorf("cgroup %s: enable controllers: %w", dir, err)
			}
		}
	}
	return nil
}

// removeCgroupRoot kills every process left in the node's cgroups (a
// container whose shim died with containerd) and removes them, deepest
// first.
func removeCgroupRoot(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hierarchies {
		top := filepath.Join(h, root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, dir := range dirs {
			if err := removeCgroup(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func removeCgroup(dir string) error {
	var err error
	for range 50 {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, field := range strings.Fields(string(procs)) {
			if pid, perr := strconv.Atoi(field); perr == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

type mount struct{ mountPoint, fsType string }

// mountInfo lists this process's mounts (/proc/self/mountinfo).
func mountInfo() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mount{mountPoint: unescapeMountPath(fields[4]), fsType: fields[sep+1]})
	}
	return out
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+3 < len(p) {
			if n, err := strconv.ParseUint(p[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below dir, deepest first: the
// kubelet's volume mounts (tmpfs for secrets and projected volumes) and
// containerd's container root filesystems, which would otherwise make the
// directory impossible to remove.
func unmountUnder(dir string) error {
	var points []string
	for _, m := range mountInfo() {
		if m.mountPoint == dir || strings.HasPrefix(m.mountPoint, dir+"/") {
			points = append(points, m.mountPoint)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// deleteLink removes a network interface (the node's bridge), if it exists.
func deleteLink(name string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link delete %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
