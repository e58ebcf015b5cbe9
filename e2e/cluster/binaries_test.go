package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRequiredVersion(t *testing.T) {
	gomod := []byte(`module example.com/tools

go 1.26.0

require k8s.io/kubernetes v1.37.1

require (
	sigs.k8s.io/kwok v0.8.0 // indirect
	go.etcd.io/etcd/server/v3 v3.6.16
)

replace k8s.io/api => k8s.io/api v0.37.1
`)
	for module, want := range map[string]string{
		"k8s.io/kubernetes":         "v1.37.1",
		"sigs.k8s.io/kwok":          "v0.8.0",
		"go.etcd.io/etcd/server/v3": "v3.6.16",
	} {
		got, err := requiredVersion(gomod, module)
		if err != nil || got != want {
			t.Errorf("requiredVersion(%s) = %q, %v; want %q", module, got, err, want)
		}
	}
	if _, err := requiredVersion(gomod, "k8s.io/api"); err == nil {
		t.Error("a replace directive is not a requirement")
	}
}

func TestCacheKeyFollowsPins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tm := toolModule{name: "kwok", module: "sigs.k8s.io/kwok"}
	write("go.mod", "module x\n\nrequire sigs.k8s.io/kwok v0.8.0\n")
	write("go.sum", "a h1:1\n")
	key1, version, err := tm.cacheKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if version != "v0.8.0" || !strings.HasPrefix(key1, "kwok-v0.8.0-") {
		t.Errorf("key %q, version %q", key1, version)
	}
	again, _, _ := tm.cacheKey(dir)
	if again != key1 {
		t.Errorf("key not stable: %q then %q", key1, again)
	}
	write("go.sum", "a h1:2\n")
	key2, _, _ := tm.cacheKey(dir)
	if key2 == key1 {
		t.Error("changing go.sum kept the cache key")
	}
}

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

// The repository's own tools modules must pin what EnsureBinaries expects.
func TestToolModulesInRepository(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Skip("not inside the copse repository:", err)
	}
	want := map[string]string{"etcd": "v3.6.16", "kube": "v1.37.1", "kwok": "v0.8.0"}
	for _, tm := range toolModules {
		_, version, err := tm.cacheKey(filepath.Join(root, "hack", "tools", tm.name))
		if err != nil {
			t.Errorf("%s: %v", tm.name, err)
			continue
		}
		if version != want[tm.name] {
			t.Errorf("%s pins %s, want %s", tm.name, version, want[tm.name])
		}
	}
}
