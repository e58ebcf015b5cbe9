package cluster

import (
	"os"
	"path/filepath"
	"slices"
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

// writeToolsModule writes root/hack/tools/<name>/ with the given files.
func writeToolsModule(t *testing.T, root, name string, files map[string]string) {
	t.Helper()
	for file, content := range files {
		p := filepath.Join(root, "hack", "tools", name, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCacheKeyFollowsEveryInput(t *testing.T) {
	root := t.TempDir()
	tool := Tool{Name: "gen", Module: "example.com/gen", Binaries: map[string]string{
		"gen": "example.com/gen/cmd/gen", "local": "./local",
	}}
	writeToolsModule(t, root, "gen", map[string]string{
		"go.mod":         "module x\n\nrequire example.com/gen v0.8.0\n",
		"go.sum":         "a h1:1\n",
		"local/main.go":  "package main\n",
		"unbuilt/doc.go": "package unbuilt\n",
	})
	key := func() string {
		t.Helper()
		p, err := tool.pin(root)
		if err != nil {
			t.Fatal(err)
		}
		if p.version != "v0.8.0" {
			t.Fatalf("version %q", p.version)
		}
		return p.key
	}
	first := key()
	if !strings.HasPrefix(first, "gen-v0.8.0-") {
		t.Errorf("key %q", first)
	}
	if again := key(); again != first {
		t.Errorf("key not stable: %q then %q", first, again)
	}
	seen := map[string]string{first: "the start"}
	for _, change := range []struct {
		what string
		do   func()
	}{
		{"go.sum", func() { writeToolsModule(t, root, "gen", map[string]string{"go.sum": "a h1:2\n"}) }},
		{"go.mod", func() {
			writeToolsModule(t, root, "gen", map[string]string{"go.mod": "module x\n\nrequire example.com/gen v0.8.0\n\nreplace a => b v1\n"})
		}},
		{"the source of a local package", func() {
			writeToolsModule(t, root, "gen", map[string]string{"local/main.go": "package main\n\nfunc main() {}\n"})
		}},
		{"the linker flags", func() {
			tool.linkerFlags = func([]byte, string) ([]string, error) { return []string{"-s"}, nil }
		}},
	} {
		change.do()
		k := key()
		if prev, dup := seen[k]; dup {
			t.Errorf("changing %s kept the cache key of %s", change.what, prev)
		}
		seen[k] = change.what
	}
	before := key()
	writeToolsModule(t, root, "gen", map[string]string{"unbuilt/doc.go": "package unbuilt // changed\n"})
	if key() != before {
		t.Error("a package that is not built changed the cache key")
	}
}

func TestGoBinaryName(t *testing.T) {
	for pkg, want := range map[string]string{
		"go.etcd.io/etcd/server/v3":            "server",
		"helm.sh/helm/v3/cmd/helm":             "helm",
		"sigs.k8s.io/jobset":                   "jobset",
		"./crdgen":                             "crdgen",
		"./cmd/trainer-oracle":                 "trainer-oracle",
		"k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
		"example.com/tools/vet":                "vet",
	} {
		if got := goBinaryName(pkg); got != want {
			t.Errorf("goBinaryName(%s) = %s, want %s", pkg, got, want)
		}
	}
}

func TestLinkerFlags(t *testing.T) {
	helm, err := helmLinkerFlags([]byte("module x\n\nrequire (\n\tk8s.io/client-go v0.37.0 // indirect\n)\n"), "v3.22.0")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(helm, " ")
	for _, want := range []string{
		"-X helm.sh/helm/v3/internal/version.version=v3.22.0",
		"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37",
		"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("helm's flags %q lack %q", joined, want)
		}
	}
	if _, err := helmLinkerFlags([]byte("module x\n"), "v3.22.0"); err == nil {
		t.Error("helm's flags need client-go's version")
	}
	kube, err := kubernetesLinkerFlags(nil, "v1.37.1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kube, "k8s.io/component-base/version.gitMinor=37") || !slices.Contains(kube, "k8s.io/client-go/pkg/version.gitVersion=v1.37.1") {
		t.Errorf("kubernetes flags %v", kube)
	}
	if _, err := kubernetesLinkerFlags(nil, "master"); err == nil {
		t.Error("want an error for a version without major and minor")
	}
}

// Every tools module under hack/tools is a row of Tools (so that `make
// tools` builds it), every row has its module, and the pins are the
// versions the documentation states.
func TestToolsMatchTheRepository(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal("not inside the copse repository:", err)
	}
	mods, err := filepath.Glob(filepath.Join(root, "hack", "tools", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range mods {
		dirs = append(dirs, filepath.Base(filepath.Dir(m)))
	}
	slices.Sort(dirs)
	names := toolNames()
	slices.Sort(names)
	if !slices.Equal(dirs, names) {
		t.Errorf("tools modules %v, rows of Tools %v: each module needs a row", dirs, names)
	}
	want := map[string]string{
		ToolEtcd: "v3.6.16", ToolKube: "v1.37.1", ToolKwok: "v0.8.0",
		ToolHelm: "v3.22.0", ToolJobSet: "v0.12.0", ToolControllerGen: "v0.23.0",
		ToolTrainerOracle: "v2.3.0", ToolKueue: "v0.19.2", ToolGolangciLint: "v2.15.0",
		ToolKubelet: "v1.37.1", ToolContainerd: "v2.4.2", ToolRunc: "v1.5.3", ToolCNIPlugins: "v1.10.0", ToolPromtool: "v0.316.0",
	}
	for _, tool := range Tools {
		p, err := tool.pin(root)
		if err != nil {
			t.Errorf("%s: %v", tool.Name, err)
			continue
		}
		if p.version != want[tool.Name] {
			t.Errorf("%s pins %s, want %s", tool.Name, p.version, want[tool.Name])
		}
	}
}

func TestFindingTools(t *testing.T) {
	if tool, err := ToolBuilding("kube-scheduler"); err != nil || tool.Name != ToolKube {
		t.Errorf("ToolBuilding(kube-scheduler) = %v, %v", tool.Name, err)
	}
	if tool, err := ToolBuilding("crdgen"); err != nil || tool.Name != ToolControllerGen {
		t.Errorf("ToolBuilding(crdgen) = %v, %v", tool.Name, err)
	}
	if tool, err := ToolBuilding("trainer-oracle"); err != nil || tool.Name != ToolTrainerOracle {
		t.Errorf("ToolBuilding(trainer-oracle) = %v, %v", tool.Name, err)
	}
	if _, err := ToolBuilding("docker"); err == nil {
		t.Error("want an error for a binary no tool builds")
	}
	if _, err := FindTool("nope"); err == nil || !strings.Contains(err.Error(), ToolJobSet) {
		t.Errorf("want an error listing the known tools, got %v", err)
	}
}
