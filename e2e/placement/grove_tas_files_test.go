package placement_test

// Unit checks of the Grove manifests in testdata/grove-tas; they need no
// cluster: go test ./e2e/placement/ -run 'TestGroveTAS|TestEveryGroveTAS'

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

// groveTASFiles lists the manifests in groveTASDir.
func groveTASFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(groveTASDir)
	if err != nil {
		t.Fatalf("listing %s: %v", groveTASDir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestEveryGroveTASManifestIsUsed fails when a manifest in groveTASDir is
// applied by no ported test (groveTASManifests), or a test names a file that
// is not there: a Grove case would be skipped silently.
func TestEveryGroveTASManifestIsUsed(t *testing.T) {
	files := groveTASFiles(t)
	if len(files) == 0 {
		t.Fatalf("no manifest in %s", groveTASDir)
	}
	for _, f := range files {
		if _, ok := groveTASManifests[f]; !ok {
			t.Errorf("%s is applied by no ported Grove test (groveTASManifests)", f)
		}
	}
	for f, test := range groveTASManifests {
		if !slices.Contains(files, f) {
			t.Errorf("%s names %s, which is not in %s", test, f, groveTASDir)
		}
	}
}

// TestGroveTASManifestsAreUnchanged recomputes each manifest's git blob id
// and compares it with the one PROVENANCE.md records from Grove's commit:
// the files must stay byte for byte Grove's, and every one must be recorded.
func TestGroveTASManifestsAreUnchanged(t *testing.T) {
	provenance, err := os.ReadFile(filepath.Join(groveTASDir, "PROVENANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range groveTASFiles(t) {
		if files[f], err = os.ReadFile(filepath.Join(groveTASDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, problem := range framework.ProvenanceMismatches(provenance, files) {
		t.Error(problem)
	}
}

// TestLoadGroveManifestChangesOnlyTheScheduler checks the one change the
// ported tests make to Grove's manifests.
func TestLoadGroveManifestChangesOnlyTheScheduler(t *testing.T) {
	for _, f := range groveTASFiles(t) {
		pcs, err := loadGroveManifest(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		raw, err := os.ReadFile(filepath.Join(groveTASDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(raw), "schedulerName: kai-scheduler"); n != len(pcs.Spec.Template.Cliques) {
			t.Errorf("%s: %d cliques, %d schedulerName lines", f, len(pcs.Spec.Template.Cliques), n)
		}
		for _, c := range pcs.Spec.Template.Cliques {
			if got := c.Spec.PodSpec.SchedulerName; got != "default-scheduler" {
				t.Errorf("%s: clique %s has schedulerName %q, want default-scheduler", f, c.Name, got)
			}
		}
		if pcs.Namespace != "" {
			t.Errorf("%s: namespace %q, want none (a spec sets its own)", f, pcs.Namespace)
		}
	}
}
