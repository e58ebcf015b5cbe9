package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/copse-dev/copse/e2e/cluster"
)

// OperatorBinaryEnvVar, when set, names a copse-operator binary to run
// instead of building one (e.g. bin/copse-operator from `make build`).
const OperatorBinaryEnvVar = "COPSE_E2E_OPERATOR_BINARY"

// operatorBuildTimeout bounds `go build`; a cold build cache takes about a
// minute on 2 cores.
const operatorBuildTimeout = 10 * time.Minute

// operatorBinary is the binary built by this test process, shared by every
// operator it starts.
var operatorBinary struct {
	mu   sync.Mutex
	path string
}

// ensureOperatorBinary returns the operator binary to run: $COPSE_E2E_OPERATOR_BINARY,
// or one built from the working tree into dir, once per test process. dir
// should live as long as the suite's cluster (it is cleaned up with it); if
// it has gone when another suite of the same process asks, the binary is
// built again into that suite's dir, from Go's build cache.
func ensureOperatorBinary(ctx context.Context, dir string) (string, error) {
	if path := os.Getenv(OperatorBinaryEnvVar); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", OperatorBinaryEnvVar, path, err)
		}
		return filepath.Abs(path)
	}
	operatorBinary.mu.Lock()
	defer operatorBinary.mu.Unlock()
	if operatorBinary.path != "" {
		if _, err := os.Stat(operatorBinary.path); err == nil {
			return operatorBinary.path, nil
		}
	}
	path := filepath.Join(dir, "copse-operator")
	if err := buildOperator(ctx, path); err != nil {
		return "", err
	}
	operatorBinary.path = path
	return path, nil
}

// buildOperator runs `go build -o path ./operator` at the repository root.
func buildOperator(ctx context.Context, path string) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return fmt.Errorf("build copse-operator: %w", err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build copse-operator: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("build copse-operator: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, operatorBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", path, "./operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build copse-operator (go build -o %s ./operator in %s): %w\n%s", path, root, err, out)
	}
	return nil
}

// EnsureOperatorBinary is ensureOperatorBinary for programs outside the
// suites (make demo): the copse-operator binary built from the working tree
// into dir.
func EnsureOperatorBinary(ctx context.Context, dir string) (string, error) {
	return ensureOperatorBinary(ctx, dir)
}
