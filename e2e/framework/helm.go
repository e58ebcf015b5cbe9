package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/copse-dev/copse/e2e/cluster"
)

// HelmBinaryEnvVar, when set, names a helm binary to run instead of the
// pinned one.
const HelmBinaryEnvVar = "COPSE_HELM_BINARY"

// helmModule is the module hack/tools/helm pins; its version names the
// cached binary.
const helmModule = "helm.sh/helm/v3"

// helmBuildTimeout bounds `go build` of helm: about 2 minutes on 2 cores
// with a cold build cache.
const helmBuildTimeout = 15 * time.Minute

// HelmVersion is the helm version pinned in hack/tools/helm/go.mod.
func HelmVersion() (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	gomod := filepath.Join(root, "hack", "tools", "helm", "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read the helm tools module: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == helmModule {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s requires no %s", gomod, helmModule)
}

// HelmBinary returns the pinned helm: $COPSE_HELM_BINARY, or
// <cache>/bin/helm-<version>, the file `make helm` builds. When that file is
// missing it is built there the same way (hack/tools/helm, with the flags of
// hack/tools/helm/ldflags.sh), under a file lock so that concurrent test
// processes build it once.
func HelmBinary(ctx context.Context) (string, error) {
	if path := os.Getenv(HelmBinaryEnvVar); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", HelmBinaryEnvVar, path, err)
		}
		return filepath.Abs(path)
	}
	version, err := HelmVersion()
	if err != nil {
		return "", err
	}
	cache, err := cluster.CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "bin", "helm-"+version)
	if isExecutable(path) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	unlock, err := cluster.LockFile(ctx, path+".lock")
	if err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	defer unlock()
	if isExecutable(path) { // built by another process meanwhile
		return path, nil
	}
	if err := buildHelm(ctx, path); err != nil {
		return "", fmt.Errorf("build helm %s into %s (as `make helm` does): %w", version, path, err)
	}
	return path, nil
}

func buildHelm(ctx context.Context, path string) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	srcDir := filepath.Join(root, "hack", "tools", "helm")
	ctx, cancel := context.WithTimeout(ctx, helmBuildTimeout)
	defer cancel()
	ldflags, err := exec.CommandContext(ctx, "bash", filepath.Join(srcDir, "ldflags.sh")).Output()
	if err != nil {
		return fmt.Errorf("hack/tools/helm/ldflags.sh: %w", err)
	}
	tmp := path + ".tmp"
	cmd := exec.CommandContext(ctx, goTool, "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", tmp, helmModule+"/cmd/helm")
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %w\n%s", srcDir, err, out)
	}
	return os.Rename(tmp, path)
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// Helm runs the pinned helm binary with its own configuration, cache and
// data directories (so that a developer's repositories and plugins play no
// part) and, when Kubeconfig is set, against that cluster.
type Helm struct {
	Binary     string
	Kubeconfig string
	// Home holds helm's config, cache and data directories.
	Home string
}

// NewHelm locates (or builds) the pinned helm; home is created if missing.
func NewHelm(ctx context.Context, kubeconfig, home string) (*Helm, error) {
	binary, err := HelmBinary(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	return &Helm{Binary: binary, Kubeconfig: kubeconfig, Home: home}, nil
}

// Run runs helm with args and returns its standard output; an error carries
// standard error.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.Binary, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"),
	)
	if h.Kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+h.Kubeconfig)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// ChartDir is charts/copse in the repository.
func ChartDir() (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "copse"), nil
}
