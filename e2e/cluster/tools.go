package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// Names of the pinned tools (rows of Tools): each is a directory under
// hack/tools holding a go.mod that pins the tool's version.
const (
	ToolEtcd          = "etcd"
	ToolKube          = "kube"
	ToolKwok          = "kwok"
	ToolHelm          = "helm"
	ToolJobSet        = "jobset"
	ToolControllerGen = "controller-gen"
	ToolTrainerOracle = "trainer-oracle"
	ToolKueue         = "kueue"
	ToolGolangciLint  = "golangci-lint"
	ToolPromtool      = "promtool"
	// The real nodes' parts (realnode.go): the kubelet, containerd, runc
	// and the CNI plugins.
	ToolKubelet    = "kubelet"
	ToolContainerd = "containerd"
	ToolRunc       = "runc"
	ToolCNIPlugins = "cni-plugins"
)

// Tool is one pinned tool: a tools module under hack/tools, built as a unit
// into one directory of the shared cache (<cache>/bin/<name>-<version>-<hash>/)
// whose name changes with every pin, so that bumping a pin rebuilds exactly
// that tool and nothing is ever built twice.
type Tool struct {
	// Name is the tools module's directory under hack/tools, and the prefix
	// of its cache directory.
	Name string
	// Module is the required module whose version names the build.
	Module string
	// Binaries maps each binary's name to its package: an import path, or a
	// path relative to the tools module ("./crdgen") for a package of the
	// tools module itself, whose source then keys the cache too.
	Binaries map[string]string
	// ColdBuild is the rough cold-build time on 2 cores, for the progress
	// line and to start the longest builds first (EnsureTools).
	ColdBuild time.Duration
	// linkerFlags returns the -ldflags of the build, from the tools
	// module's go.mod and the tool's version; nil when the build needs none.
	linkerFlags func(gomod []byte, version string) ([]string, error)
	// tags are the build tags.
	tags []string
	// buildEnv returns variables the go command needs besides the
	// caller's (cgo's flags for a C library fetched first), or nil.
	buildEnv func(ctx context.Context, progress io.Writer) ([]string, error)
}

// Tools is every pinned tool; `make tools` (`copse-cluster build`) builds
// them all.
var Tools = []Tool{
	{
		Name:   ToolEtcd,
		Module: "go.etcd.io/etcd/server/v3",
		// etcd's main package is the module root, whose import path ends in
		// "v3": the binary is renamed after the build.
		Binaries:  map[string]string{"etcd": "go.etcd.io/etcd/server/v3"},
		ColdBuild: 2 * time.Minute,
	},
	{
		Name:   ToolKube,
		Module: "k8s.io/kubernetes",
		Binaries: map[string]string{
			"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
			"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
			"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
			"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
		},
		ColdBuild:   8 * time.Minute,
		linkerFlags: kubernetesLinkerFlags,
	},
	{
		Name:      ToolKwok,
		Module:    "sigs.k8s.io/kwok",
		Binaries:  map[string]string{"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
		ColdBuild: 2 * time.Minute,
	},
	{
		Name:        ToolHelm,
		Module:      "helm.sh/helm/v3",
		Binaries:    map[string]string{"helm": "helm.sh/helm/v3/cmd/helm"},
		ColdBuild:   2 * time.Minute,
		linkerFlags: helmLinkerFlags,
	},
	{
		// The JobSet controller (e2e/framework/jobset.go), run by the
		// benchmark as its reference, by e2e suites and by `make demo`. Its
		// main package is the module root.
		Name:      ToolJobSet,
		Module:    "sigs.k8s.io/jobset",
		Binaries:  map[string]string{"jobset-controller": "sigs.k8s.io/jobset"},
		ColdBuild: 2 * time.Minute,
	},
	{
		// controller-gen, and crdgen: its CRD generator with Grove's embedded
		// package registered as types-only (hack/tools/controller-gen/crdgen).
		Name:   ToolControllerGen,
		Module: "sigs.k8s.io/controller-tools",
		Binaries: map[string]string{
			"controller-gen": "sigs.k8s.io/controller-tools/cmd/controller-gen",
			"crdgen":         "./crdgen",
		},
		ColdBuild:   1 * time.Minute,
		linkerFlags: controllerGenLinkerFlags,
	},
	{
		// Kubeflow Trainer's own TrainJob build, run on JSON input: the
		// reference copse's TrainJob front-end is compared with. Its package
		// is the tools module's own (hack/tools/trainer-oracle/cmd/trainer-oracle).
		// And Trainer's controller manager itself (a tool directive of the
		// module), which the TrainJob suite runs to make the TrainJobs
		// copse adopts after a move from Trainer (e2e/framework/trainer.go).
		Name:   ToolTrainerOracle,
		Module: "github.com/kubeflow/trainer/v2",
		Binaries: map[string]string{
			"trainer-oracle":             "./cmd/trainer-oracle",
			"trainer-controller-manager": "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
		},
		ColdBuild: 5 * time.Minute,
	},
	{
		// Kueue's controller manager (e2e/framework/kueue.go), run by the
		// kueue suite, `make demo` and the benchmark.
		Name:      ToolKueue,
		Module:    "sigs.k8s.io/kueue",
		Binaries:  map[string]string{"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
		ColdBuild: 4 * time.Minute,
	},
	{
		// The linter of `make verify` (.golangci.yaml), as JobSet, Kueue and
		// Kubeflow Trainer keep one.
		Name:      ToolGolangciLint,
		Module:    "github.com/golangci/golangci-lint/v2",
		Binaries:  map[string]string{"golangci-lint": "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"},
		ColdBuild: 3 * time.Minute,
	},
	{
		// Prometheus' promtool: `make test-alerts` checks the chart's alert
		// rules and runs their unit tests (charts/copse/alerts) with it.
		Name:      ToolPromtool,
		Module:    "github.com/prometheus/prometheus",
		Binaries:  map[string]string{"promtool": "github.com/prometheus/prometheus/cmd/promtool"},
		ColdBuild: 4 * time.Minute,
	},
	{
		// The real nodes' kubelet, at the control plane's version; a module
		// of its own so that the control plane's cache entry stays valid.
		Name:        ToolKubelet,
		Module:      "k8s.io/kubernetes",
		Binaries:    map[string]string{"kubelet": "k8s.io/kubernetes/cmd/kubelet"},
		ColdBuild:   4 * time.Minute,
		linkerFlags: kubernetesLinkerFlags,
	},
	{
		// containerd with its CRI plugin, the runc shim it starts per pod,
		// and ctr, which imports the images made here.
		Name:   ToolContainerd,
		Module: "github.com/containerd/containerd/v2",
		Binaries: map[string]string{
			"containerd":              "github.com/containerd/containerd/v2/cmd/containerd",
			"containerd-shim-runc-v2": "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
			"ctr":                     "github.com/containerd/containerd/v2/cmd/ctr",
		},
		ColdBuild: 3 * time.Minute,
	},
	{
		// runc, static and with seccomp (as its own release binaries are):
		// containerd gives a container that asks for RuntimeDefault a
		// seccomp profile, which a runc without seccomp refuses to run.
		Name:        ToolRunc,
		Module:      "github.com/opencontainers/runc",
		Binaries:    map[string]string{"runc": "github.com/opencontainers/runc"},
		ColdBuild:   1 * time.Minute,
		tags:        []string{"seccomp", "netgo", "osusergo"},
		linkerFlags: func([]byte, string) ([]string, error) { return []string{"-extldflags", "-static"}, nil },
		buildEnv:    libseccompBuildEnv,
	},
	{
		Name:   ToolCNIPlugins,
		Module: "github.com/containernetworking/plugins",
		Binaries: map[string]string{
			"bridge":     "github.com/containernetworking/plugins/plugins/main/bridge",
			"host-local": "github.com/containernetworking/plugins/plugins/ipam/host-local",
			"loopback":   "github.com/containernetworking/plugins/plugins/main/loopback",
		},
		ColdBuild: 1 * time.Minute,
	},
}

// RealNodeTools are the tools only real nodes need: `make tools` builds
// them too, but a cluster without real nodes never waits for them.
var RealNodeTools = []string{ToolKubelet, ToolContainerd, ToolRunc, ToolCNIPlugins}

// libseccompBuildEnv points cgo at Debian's libseccomp-dev, extracted into
// the cache (EnsureDebianPackage), through pkg-config: the package's .pc
// file says /usr, which the sysroot redirects into the extracted tree. Its
// shared library link is removed there, so the linker takes the static one.
func libseccompBuildEnv(ctx context.Context, progress io.Writer) ([]string, error) {
	dir, err := EnsureDebianPackage(ctx, debLibseccompDev, progress)
	if err != nil {
		return nil, err
	}
	pcFiles, _ := filepath.Glob(filepath.Join(dir, "usr", "lib", "*", "pkgconfig", "libseccomp.pc"))
	if len(pcFiles) != 1 {
		return nil, fmt.Errorf("%s in %s: found %d libseccomp.pc files, want 1", debLibseccompDev, dir, len(pcFiles))
	}
	libDir := filepath.Dir(filepath.Dir(pcFiles[0]))
	if _, err := os.Stat(filepath.Join(libDir, "libseccomp.a")); err != nil {
		return nil, fmt.Errorf("%s: no static library: %w", debLibseccompDev, err)
	}
	if err := os.Remove(filepath.Join(libDir, "libseccomp.so")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", debLibseccompDev, err)
	}
	return []string{
		"CGO_ENABLED=1",
		"PKG_CONFIG_PATH=" + filepath.Dir(pcFiles[0]),
		"PKG_CONFIG_SYSROOT_DIR=" + dir,
	}, nil
}

// kubernetesLinkerFlags stamps the version Kubernetes' own build stamps.
// Built from the module source without them, every component reports
// v0.0.0-master, and clients that check the server version (Helm's chart
// kubeVersion, kubectl version skew warnings) misjudge the cluster.
func kubernetesLinkerFlags(_ []byte, version string) ([]string, error) {
	major, minor, err := majorMinor(version)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version: %w", err)
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+version,
			"-X", pkg+".gitMajor="+major,
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean",
		)
	}
	return flags, nil
}

// helmLinkerFlags are those of helm's own release build: its version, and
// the Kubernetes version `helm template` and `helm lint` assume without a
// cluster, which helm derives from its client-go (v0.<minor> is 1.<minor>).
func helmLinkerFlags(gomod []byte, version string) ([]string, error) {
	clientGo, err := requiredVersion(gomod, "k8s.io/client-go")
	if err != nil {
		return nil, fmt.Errorf("helm's Kubernetes version: %w", err)
	}
	_, minor, err := majorMinor(clientGo)
	if err != nil {
		return nil, fmt.Errorf("helm's Kubernetes version: client-go %w", err)
	}
	flags := []string{"-s", "-w", "-X", "helm.sh/helm/v3/internal/version.version=" + version}
	for _, pkg := range []string{"helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"} {
		flags = append(flags, "-X", pkg+".k8sVersionMajor=1", "-X", pkg+".k8sVersionMinor="+minor)
	}
	return flags, nil
}

// controllerGenLinkerFlags stamp controller-gen's version, which it would
// otherwise read from the build info: that differs between machines and
// would make the controller-gen.kubebuilder.io/version annotation of the
// generated CRDs unstable.
func controllerGenLinkerFlags(_ []byte, version string) ([]string, error) {
	return []string{"-X", "sigs.k8s.io/controller-tools/pkg/version.version=" + version}, nil
}

// majorMinor splits v<major>.<minor>[.<patch>...].
func majorMinor(version string) (major, minor string, err error) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("%q is not v<major>.<minor>", version)
	}
	return parts[0], parts[1], nil
}

// FindTool returns the row of Tools called name.
func FindTool(name string) (Tool, error) {
	for _, t := range Tools {
		if t.Name == name {
			return t, nil
		}
	}
	return Tool{}, fmt.Errorf("no pinned tool %q (known: %s)", name, strings.Join(toolNames(), ", "))
}

// ToolBuilding returns the row of Tools that builds binary.
func ToolBuilding(binary string) (Tool, error) {
	for _, t := range Tools {
		if _, ok := t.Binaries[binary]; ok {
			return t, nil
		}
	}
	return Tool{}, fmt.Errorf("no pinned tool builds %q (tools: %s)", binary, strings.Join(toolNames(), ", "))
}

func toolNames() []string {
	var names []string
	for _, t := range Tools {
		names = append(names, t.Name)
	}
	return names
}

// BuiltTool is a tool in the cache.
type BuiltTool struct {
	Tool
	// Version is the version of Tool.Module the tools module pins.
	Version string
	// Dir is the cache directory that holds every binary of the tool.
	Dir string
	// SourceDir is the tools module, hack/tools/<name>.
	SourceDir string
}

// Path is the absolute path of one of the tool's binaries.
func (b BuiltTool) Path(binary string) string { return filepath.Join(b.Dir, binary) }

// EnsureTools builds every tool of Tools that is not in the cache yet,
// parallel at a time and the longest builds first, and returns them in the
// order of Tools. One go build leaves a core idle much of the time (module
// downloads, the linker, long dependency chains), so two builds at once fill
// a 2-core machine. On a host that cannot run real nodes (RealNodeSupport)
// their tools are left out, saying why: nothing there could run them, and
// runc's build needs what such a host may lack (Debian's packages).
func EnsureTools(ctx context.Context, parallel int, progress io.Writer) ([]BuiltTool, error) {
	var order []int
	unsupported := RealNodeSupport()
	if unsupported != nil {
		fmt.Fprintf(progress, "not building the real nodes' tools (%s): %v\n", strings.Join(RealNodeTools, ", "), unsupported)
	}
	for i, t := range Tools {
		if unsupported == nil || !slices.Contains(RealNodeTools, t.Name) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(Tools[b].ColdBuild, Tools[a].ColdBuild) })
	built := make([]BuiltTool, len(Tools))
	errs := make([]error, len(Tools))
	slots := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, i := range order {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			built[i], errs[i] = Tools[i].Ensure(ctx, progress)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(built, func(b BuiltTool) bool { return b.Dir == "" }), nil
}

// EnsureTool returns the tool called name (a row of Tools), building it into
// the shared cache first if it is not there yet. Builds hold a lock per
// cache entry, so that concurrent test processes build a tool once and never
// see half of it. Progress goes to progress.
func EnsureTool(ctx context.Context, name string, progress io.Writer) (BuiltTool, error) {
	t, err := FindTool(name)
	if err != nil {
		return BuiltTool{}, err
	}
	return t.Ensure(ctx, progress)
}

// EnsureToolBinary returns the path of binary, building the tool that
// provides it first if needed.
func EnsureToolBinary(ctx context.Context, binary string, progress io.Writer) (string, error) {
	t, err := ToolBuilding(binary)
	if err != nil {
		return "", err
	}
	built, err := t.Ensure(ctx, progress)
	if err != nil {
		return "", err
	}
	return built.Path(binary), nil
}

// pinned is what a tools module pins: the tool's version, the linker flags
// and the cache key derived from both and from every input of the build.
type pinned struct {
	srcDir  string
	version string
	ldflags []string
	tags    []string
	env     []string
	key     string
}

// withEnv adds the build's environment to p, and to its cache key, so
// that a new version of what the environment points at rebuilds the tool.
func (p pinned) withEnv(env []string) pinned {
	if len(env) == 0 {
		return p
	}
	h := sha256.New()
	h.Write([]byte(p.key))
	h.Write([]byte(strings.Join(env, "\x00")))
	p.env = env
	p.key = fmt.Sprintf("%s-%s", p.key, hex.EncodeToString(h.Sum(nil))[:8])
	return p
}

// pin reads the tools module under root.
func (t Tool) pin(root string) (pinned, error) {
	srcDir := filepath.Join(root, "hack", "tools", t.Name)
	gomod, err := os.ReadFile(filepath.Join(srcDir, "go.mod"))
	if err != nil {
		return pinned{}, fmt.Errorf("read tools module %s: %w", t.Name, err)
	}
	gosum, err := os.ReadFile(filepath.Join(srcDir, "go.sum"))
	if err != nil {
		return pinned{}, fmt.Errorf("read tools module %s: %w", t.Name, err)
	}
	version, err := requiredVersion(gomod, t.Module)
	if err != nil {
		return pinned{}, fmt.Errorf("tools module %s: %w", t.Name, err)
	}
	p := pinned{srcDir: srcDir, version: version, tags: t.tags}
	if t.linkerFlags != nil {
		if p.ldflags, err = t.linkerFlags(gomod, version); err != nil {
			return pinned{}, fmt.Errorf("tools module %s: %w", t.Name, err)
		}
	}
	// go.mod is hashed too because a changed replace directive need not
	// change go.sum; the linker flags because changing how binaries are
	// stamped must rebuild them; local packages because they are source.
	h := sha256.New()
	h.Write(gomod)
	h.Write([]byte{0})
	h.Write(gosum)
	if len(p.ldflags) > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strings.Join(p.ldflags, " ")))
	}
	if len(p.tags) > 0 {
		h.Write([]byte{0})
		h.Write([]byte("tags " + strings.Join(p.tags, ",")))
	}
	for _, bin := range slices.Sorted(maps.Keys(t.Binaries)) {
		if pkg := t.Binaries[bin]; strings.HasPrefix(pkg, "./") {
			if err := hashPackageSource(h, srcDir, pkg); err != nil {
				return pinned{}, fmt.Errorf("tools module %s: %w", t.Name, err)
			}
		}
	}
	p.key = fmt.Sprintf("%s-%s-%s", t.Name, version, hex.EncodeToString(h.Sum(nil))[:12])
	return p, nil
}

// hashPackageSource adds the name and content of every file of the package
// directory pkg (relative to srcDir) to h.
func hashPackageSource(h io.Writer, srcDir, pkg string) error {
	dir := filepath.Join(srcDir, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read package %s: %w", pkg, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("read package %s: %w", pkg, err)
		}
		fmt.Fprintf(h, "\x00%s/%s\x00", pkg, e.Name())
		_, _ = h.Write(data)
	}
	return nil
}

// Ensure returns the tool, building it into the shared cache first if
// needed.
func (t Tool) Ensure(ctx context.Context, progress io.Writer) (BuiltTool, error) {
	root, err := RepoRoot()
	if err != nil {
		return BuiltTool{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return BuiltTool{}, err
	}
	p, err := t.pin(root)
	if err != nil {
		return BuiltTool{}, err
	}
	if t.buildEnv != nil {
		env, err := t.buildEnv(ctx, progress)
		if err != nil {
			return BuiltTool{}, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		p = p.withEnv(env)
	}
	built := BuiltTool{Tool: t, Version: p.version, Dir: filepath.Join(cache, "bin", p.key), SourceDir: p.srcDir}
	names := slices.Sorted(maps.Keys(t.Binaries))
	err = buildIntoCache(ctx, cache, p.key, t.complete, func(tmp string) error {
		fmt.Fprintf(progress, "building %s %s (first run only, ~%d min)...\n", strings.Join(names, ", "), p.version, int(t.ColdBuild.Minutes()))
		start := time.Now()
		if err := t.build(ctx, p, tmp); err != nil {
			return fmt.Errorf("build %s %s: %w", strings.Join(names, ", "), p.version, err)
		}
		fmt.Fprintf(progress, "built %s %s in %s\n", t.Name, p.version, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		return BuiltTool{}, err
	}
	return built, nil
}

// buildIntoCache makes <cache>/bin/<key> a complete build, running build
// into a temporary directory first if it is not. The build holds a lock per
// key, so that two test processes started together on a cold cache do not
// both spend minutes building the same thing, and the final rename is what
// makes the entry visible, so an interrupted build never leaves a directory
// that looks complete.
func buildIntoCache(ctx context.Context, cache, key string, complete func(dir string) bool, build func(tmp string) error) error {
	binRoot := filepath.Join(cache, "bin")
	dir := filepath.Join(binRoot, key)
	if complete(dir) {
		return nil
	}
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return fmt.Errorf("create binary cache: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(binRoot, key+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if complete(dir) {
		return nil
	}
	// Leftovers of builds that were killed outright; holding the lock means
	// no one else is writing to them.
	stale, _ := filepath.Glob(filepath.Join(binRoot, "."+key+".tmp-*"))
	for _, d := range stale {
		_ = os.RemoveAll(d)
	}
	tmp, err := os.MkdirTemp(binRoot, "."+key+".tmp-")
	if err != nil {
		return fmt.Errorf("create build dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // no-op after the rename succeeded
	if err := build(tmp); err != nil {
		return err
	}
	if !complete(tmp) {
		return fmt.Errorf("build %s: go build succeeded but left no binaries in %s", key, tmp)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("install %s binaries: %w", key, err)
	}
	return nil
}

func (t Tool) complete(dir string) bool {
	for bin := range t.Binaries {
		if !isExecutable(filepath.Join(dir, bin)) {
			return false
		}
	}
	return true
}

func isExecutable(file string) bool {
	info, err := os.Stat(file)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o100 != 0
}

// build runs one go build for all of the tool's packages, so that they
// compile and link in parallel. A single package gets an explicit output
// file; several go into outDir, named by go build after their package path
// and renamed to the names in Binaries.
func (t Tool) build(ctx context.Context, p pinned, outDir string) error {
	args := []string{"build"}
	if len(p.tags) > 0 {
		args = append(args, "-tags", strings.Join(p.tags, ","))
	}
	if len(p.ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(p.ldflags, " "))
	}
	names := slices.Sorted(maps.Keys(t.Binaries))
	if len(names) == 1 {
		args = append(args, "-o", filepath.Join(outDir, names[0]), t.Binaries[names[0]])
	} else {
		args = append(args, "-o", outDir+string(filepath.Separator))
		for _, bin := range names {
			args = append(args, t.Binaries[bin])
		}
	}
	if _, err := goCommandEnv(ctx, p.srcDir, p.env, args...); err != nil {
		return err
	}
	if len(names) == 1 {
		return nil
	}
	for _, bin := range names {
		if built := goBinaryName(t.Binaries[bin]); built != bin {
			if err := os.Rename(filepath.Join(outDir, built), filepath.Join(outDir, bin)); err != nil {
				return fmt.Errorf("name binary %s: %w", bin, err)
			}
		}
	}
	return nil
}

// goBinaryName is the file name go build gives the binary of pkg: its last
// path element, or the one before a major-version suffix (".../server/v3"
// builds "server").
func goBinaryName(pkg string) string {
	base := path.Base(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		if dir := path.Dir(pkg); dir != "." && dir != "/" {
			return path.Base(dir)
		}
	}
	return base
}

// ModuleSource returns the directory of the pinned Module's source in the Go
// module cache, downloading it if needed, for files a tool ships besides
// its binaries (e.g. JobSet's CRD).
func (t Tool) ModuleSource(ctx context.Context) (string, error) {
	return t.DependencySource(ctx, t.Module)
}

// DependencySource returns the directory, in the Go module cache, of the
// source of a module at the version the tools module pins it to (its main
// module or one it requires, e.g. the scheduler-plugins module Kubeflow
// Trainer builds against), downloading it if needed.
func (t Tool) DependencySource(ctx context.Context, module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	srcDir := filepath.Join(root, "hack", "tools", t.Name)
	out, err := goCommand(ctx, srcDir, "mod", "download", "-json", module)
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", module, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("locate %s: %w", module, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("locate %s: %s", module, info.Error)
	}
	return info.Dir, nil
}

// goCommand runs the go command in a tools module and returns its standard
// output; an error carries the end of its output.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return goCommandEnv(ctx, dir, nil, args...)
}

// goCommandEnv is goCommand with env added to the environment.
func goCommandEnv(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is needed to build the pinned tools: %w", err)
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	// A go.work at the repository root would pull the tools module into the
	// workspace and resolve its dependencies against copse's own.
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err,
			process.LastLines(stdout.String()+stderr.String(), 30))
	}
	return stdout.Bytes(), nil
}

// requiredVersion finds the version of module in a go.mod's require
// directives (single-line or block form).
func requiredVersion(gomod []byte, module string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	inRequire := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case inRequire && fields[0] == ")":
			inRequire = false
			continue
		case fields[0] == "require" && len(fields) == 2 && fields[1] == "(":
			inRequire = true
			continue
		case fields[0] == "require":
			fields = fields[1:]
		case !inRequire:
			continue
		}
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("no requirement on %s in go.mod", module)
}
