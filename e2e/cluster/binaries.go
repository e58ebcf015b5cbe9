package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// NVIDIADRASim is the simulated NVIDIA DRA driver, built from copse's own
	// source (EnsureNVIDIADRASimBinary) and only when a cluster runs it.
	NVIDIADRASim string `json:"nvidiaDRASim,omitempty"`
}

// EnsureBinaries returns the control-plane binaries, building any that are
// not cached yet from the pinned tools modules. Progress goes to stderr.
func EnsureBinaries(ctx context.Context) (Binaries, error) {
	return ensureBinaries(ctx, os.Stderr)
}

func ensureBinaries(ctx context.Context, progress io.Writer) (Binaries, error) {
	paths := map[string]string{}
	for _, name := range []string{ToolEtcd, ToolKube, ToolKwok} {
		built, err := EnsureTool(ctx, name, progress)
		if err != nil {
			return Binaries{}, err
		}
		for bin := range built.Binaries {
			paths[bin] = built.Path(bin)
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
