package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/copse-dev/copse/e2e/cluster"
)

// HelmBinaryEnvVar, when set, names a helm binary to run instead of the
// pinned one.
const HelmBinaryEnvVar = "COPSE_HELM_BINARY"

// HelmBinary returns the pinned helm: $COPSE_HELM_BINARY, or the binary the
// tools builder (e2e/cluster, row "helm") keeps in the shared cache, built
// there first if needed, as `make helm` does.
func HelmBinary(ctx context.Context) (string, error) {
	if path := os.Getenv(HelmBinaryEnvVar); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", HelmBinaryEnvVar, path, err)
		}
		return filepath.Abs(path)
	}
	return cluster.EnsureToolBinary(ctx, "helm", os.Stderr)
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
