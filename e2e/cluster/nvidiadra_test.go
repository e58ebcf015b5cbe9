package cluster

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestNVIDIADRASimSourcesAreHashed: every copse package the simulated
// driver's binary is built from is hashed into its cache key, so that an
// edit anywhere in its source rebuilds it.
func TestNVIDIADRASimSourcesAreHashed(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := goCommand(context.Background(), root, "list", "-deps", "-f", "{{.ImportPath}}", nvidiaDRASimPackages[0])
	if err != nil {
		t.Fatal(err)
	}
	var hashed []string
	for _, pkg := range nvidiaDRASimPackages {
		hashed = append(hashed, path.Join(copseModule, pkg))
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, copseModule+"/") && !slices.Contains(hashed, pkg) {
			t.Errorf("%s depends on %s, which nvidiaDRASimPackages does not hash", NVIDIADRASim, pkg)
		}
	}
}

func TestNVIDIADRASimKeyFollowsSource(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	key, err := nvidiaDRASimKey(root)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := nvidiaDRASimKey(root)
	if key != again || !strings.HasPrefix(key, NVIDIADRASim+"-") {
		t.Errorf("key %q then %q: want one stable key named after the binary", key, again)
	}
	saved := nvidiaDRASimPackages
	t.Cleanup(func() { nvidiaDRASimPackages = saved })
	nvidiaDRASimPackages = saved[:1]
	if fewer, _ := nvidiaDRASimKey(root); fewer == key {
		t.Errorf("dropping a package's source left the key at %q", key)
	}
}
