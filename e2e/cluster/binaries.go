package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Environment variables that redirect where copse looks for things.
const (
	// EnvRepoRoot overrides the search for the copse repository (which holds
	// the hack/tools modules the binaries are built from).
	EnvRepoRoot = "COPSE_REPO_ROOT"
	// EnvCacheDir overrides <user cache dir>/copse, under which binaries and
	// the CLI's default cluster live.
	EnvCacheDir = "COPSE_CACHE_DIR"
)

const copseModule = "github.com/copse-dev/copse"

// Binaries holds absolute paths of the executables a cluster runs.
type Binaries struct {
	Etcd                  string `json:"etcd"`
	KubeAPIServer         string `json:"kubeAPIServer"`
	KubeControllerManager string `json:"kubeControllerManager"`
	KubeScheduler         string `json:"kubeScheduler"`
	Kubectl               string `json:"kubectl"`
	Kwok                  string `json:"kwok"`
}

// toolModule is one of the go.mod files under hack/tools. Each is built as a
// unit: its binaries share one cache directory, keyed by the module's
// version and dependency pins, so bumping a pin rebuilds exactly that module.
type toolModule struct {
	name     string            // directory under hack/tools, and cache key prefix
	module   string            // the required module whose version names the build
	packages map[string]string // binary name -> package path
	eta      string            // rough cold-build time, for the progress message
	// versionFlags returns the -X linker flags that stamp the version into
	// the binaries; nil when they stamp nothing.
	versionFlags func(version string) []string
}

// kubernetesVersionFlags stamps the version Kubernetes' own build stamps.
// Built from the module source without them, every component reports
// v0.0.0-master, and clients that check the server version (Helm's chart
// kubeVersion, kubectl version skew warnings) misjudge the cluster.
func kubernetesVersionFlags(version string) []string {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
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
	return flags
}

var toolModules = []toolModule{
	{
		name:   "etcd",
		module: "go.etcd.io/etcd/server/v3",
		// etcd's main package sits at the module root; the binary would be
		// named "v3" without an explicit -o file name.
		packages: map[string]string{"etcd": "go.etcd.io/etcd/server/v3"},
		eta:      "~2 min",
	},
	{
		name:   "kube",
		module: "k8s.io/kubernetes",
		packages: map[string]string{
			"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
			"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
			"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
			"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
		},
		eta:          "~8 min",
		versionFlags: kubernetesVersionFlags,
	},
	{
		name:     "kwok",
		module:   "sigs.k8s.io/kwok",
		packages: map[string]string{"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
		eta:      "~2 min",
	},
}

// EnsureBinaries returns the control-plane binaries, building any that are
// not cached yet from the pinned tools modules. Progress goes to stderr.
func EnsureBinaries(ctx context.Context) (Binaries, error) {
	return ensureBinaries(ctx, os.Stderr)
}

func ensureBinaries(ctx context.Context, progress io.Writer) (Binaries, error) {
	root, err := RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return Binaries{}, err
	}
	paths := map[string]string{}
	for _, tm := range toolModules {
		dir, err := tm.ensure(ctx, filepath.Join(root, "hack", "tools", tm.name), filepath.Join(cache, "bin"), progress)
		if err != nil {
			return Binaries{}, err
		}
		for bin := range tm.packages {
			paths[bin] = filepath.Join(dir, bin)
		}
	}
	return Binaries{
		Etcd:                  paths["etcd"],
		KubeAPIServer:         paths["kube-apiserver"],
		KubeControllerManager: paths["kube-controller-manager"],
		KubeScheduler:         paths["kube-scheduler"],
		Kubectl:               paths["kubectl"],
		Kwok:                  paths["kwok"],
	}, nil
}

// ensure returns the cache directory holding every binary of the module,
// building it first if needed.
func (tm toolModule) ensure(ctx context.Context, srcDir, binRoot string, progress io.Writer) (string, error) {
	key, version, err := tm.cacheKey(srcDir)
	if err != nil {
		return "", err
	}
	final := filepath.Join(binRoot, key)
	if tm.complete(final) {
		return final, nil
	}
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return "", fmt.Errorf("create binary cache: %w", err)
	}

	// Two test suites started together on a cold cache would otherwise both
	// spend minutes building the same thing.
	unlock, err := LockFile(ctx, filepath.Join(binRoot, key+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if tm.complete(final) {
		return final, nil
	}
	// Leftovers of builds that were killed outright; holding the lock means
	// no one else is writing to them.
	stale, _ := filepath.Glob(filepath.Join(binRoot, "."+key+".tmp-*"))
	for _, dir := range stale {
		_ = os.RemoveAll(dir)
	}

	names := slices.Sorted(maps.Keys(tm.packages))
	fmt.Fprintf(progress, "building %s %s (first run only, %s)...\n", strings.Join(names, ", "), version, tm.eta)
	start := time.Now()

	tmp, err := os.MkdirTemp(binRoot, "."+key+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create build dir: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename succeeded

	if err := tm.build(ctx, srcDir, tmp, version); err != nil {
		return "", fmt.Errorf("build %s %s: %w", strings.Join(names, ", "), version, err)
	}
	if !tm.complete(tmp) {
		return "", fmt.Errorf("build %s %s: go build succeeded but left no binaries in %s", tm.name, version, tmp)
	}
	// The rename is what makes a cache entry visible, so an interrupted build
	// never leaves a directory that looks complete.
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("install %s binaries: %w", tm.name, err)
	}
	fmt.Fprintf(progress, "built %s %s in %s\n", tm.name, version, time.Since(start).Round(time.Second))
	return final, nil
}

func (tm toolModule) complete(dir string) bool {
	for bin := range tm.packages {
		info, err := os.Stat(filepath.Join(dir, bin))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o100 == 0 {
			return false
		}
	}
	return true
}

// cacheKey is <name>-<version>-<hash of go.mod and go.sum>. go.mod is hashed
// too because a changed replace directive need not change go.sum.
func (tm toolModule) cacheKey(srcDir string) (key, version string, err error) {
	gomod, err := os.ReadFile(filepath.Join(srcDir, "go.mod"))
	if err != nil {
		return "", "", fmt.Errorf("read tools module %s: %w", tm.name, err)
	}
	gosum, err := os.ReadFile(filepath.Join(srcDir, "go.sum"))
	if err != nil {
		return "", "", fmt.Errorf("read tools module %s: %w", tm.name, err)
	}
	version, err = requiredVersion(gomod, tm.module)
	if err != nil {
		return "", "", fmt.Errorf("tools module %s: %w", tm.name, err)
	}
	h := sha256.New()
	h.Write(gomod)
	h.Write([]byte{0})
	h.Write(gosum)
	if tm.versionFlags != nil {
		// Changing how binaries are stamped must rebuild them too.
		h.Write([]byte{0})
		h.Write([]byte(strings.Join(tm.versionFlags(version), " ")))
	}
	return fmt.Sprintf("%s-%s-%s", tm.name, version, hex.EncodeToString(h.Sum(nil))[:12]), version, nil
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

// build runs one go build for all of the module's packages, so that they
// compile and link in parallel. A single package gets an explicit output
// file because its binary name need not match its import path (etcd's main
// package is the module root, ".../server/v3").
func (tm toolModule) build(ctx context.Context, srcDir, outDir, version string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build control-plane binaries: %w", err)
	}
	args := []string{"build"}
	if tm.versionFlags != nil {
		args = append(args, "-ldflags", strings.Join(tm.versionFlags(version), " "))
	}
	if len(tm.packages) == 1 {
		for bin, pkg := range tm.packages {
			args = append(args, "-o", filepath.Join(outDir, bin), pkg)
		}
	} else {
		args = append(args, "-o", outDir+string(filepath.Separator))
		for _, bin := range slices.Sorted(maps.Keys(tm.packages)) {
			args = append(args, tm.packages[bin])
		}
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = srcDir
	// A go.work at the repository root would pull the tools module into the
	// workspace and resolve Kubernetes against copse's own requirements.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), srcDir, err, lastLines(output.String(), 30))
	}
	return nil
}

// LockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait. Every build into the shared cache holds one, so that parallel
// test processes never build the same tool twice or see half a binary.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for lock %s (another build running?): %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// RepoRoot returns the root of the copse repository: $COPSE_REPO_ROOT, or
// the nearest directory at or above the working directory whose go.mod
// declares the copse module. Nested modules (hack/tools/*) are skipped.
func RepoRoot() (string, error) {
	if dir := os.Getenv(EnvRepoRoot); dir != "" {
		if !isCopseRoot(dir) {
			return "", fmt.Errorf("%s=%s: no go.mod for module %s there", EnvRepoRoot, dir, copseModule)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	return findRepoRoot(wd)
}

func findRepoRoot(start string) (string, error) {
	for dir := start; ; dir = filepath.Dir(dir) {
		if isCopseRoot(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod for module %s at or above %s; set %s", copseModule, start, EnvRepoRoot)
		}
	}
}

func isCopseRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == copseModule
		}
	}
	return false
}

// CacheDir is where copse keeps per-user state: $COPSE_CACHE_DIR or
// <user cache dir>/copse.
func CacheDir() (string, error) {
	if dir := os.Getenv(EnvCacheDir); dir != "" {
		return filepath.Abs(dir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate user cache directory (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(base, "copse"), nil
}

// DefaultDir is the cluster directory the CLI uses without --dir:
// <cache dir>/clusters/default.
func DefaultDir() (string, error) {
	base, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "clusters", "default"), nil
}
