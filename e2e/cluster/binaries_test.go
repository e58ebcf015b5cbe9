package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindRepoRootSkipsNestedModules(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "hack", "tools", "kube")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+copseModule+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module "+copseModule+"/hack/tools/kube\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findRepoRoot(nested)
	if err != nil {
		t.Fatal(err)
	}
	if got != root {
		t.Errorf("findRepoRoot = %s, want %s", got, root)
	}
	if _, err := findRepoRoot(t.TempDir()); err == nil {
		t.Error("want an error outside the repository")
	}
}

func TestRepoRootOverride(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+copseModule+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvRepoRoot, root)
	got, err := RepoRoot()
	if err != nil || got != root {
		t.Errorf("RepoRoot() = %q, %v; want %q", got, err, root)
	}
	t.Setenv(EnvRepoRoot, t.TempDir())
	if _, err := RepoRoot(); err == nil {
		t.Error("want an error when the override is not the copse repository")
	}
}
