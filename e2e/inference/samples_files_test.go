package inference_test

// Unit checks of the Grove sample fixtures; they need no cluster:
// go test ./e2e/inference/ -run 'TestGroveSamples|TestEveryGroveSample'

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/copse-dev/copse/e2e/framework"
)

// sampleFiles lists the YAML files under samplesDir, by path relative to it.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(samplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Base(path) == "PROVENANCE.md" {
			return nil
		}
		rel, err := filepath.Rel(samplesDir, path)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", samplesDir, err)
	}
	return out
}

// TestEveryGroveSampleIsChecked fails when a file under samplesDir has no
// expectations in groveSamples (a sample added later would be skipped
// silently), or an entry names no file.
func TestEveryGroveSampleIsChecked(t *testing.T) {
	files := sampleFiles(t)
	if len(files) == 0 {
		t.Fatalf("no sample under %s", samplesDir)
	}
	seen := map[string]bool{}
	for _, rel := range files {
		seen[rel] = true
		if _, ok := groveSamples[rel]; !ok {
			t.Errorf("sample %s has no expectations in groveSamples: the e2e spec would not apply it", rel)
		}
	}
	for rel := range groveSamples {
		if !seen[rel] {
			t.Errorf("groveSamples names %s, which is not under %s", rel, samplesDir)
		}
	}
}

// TestGroveSamplesAreUnchanged recomputes each fixture's git blob id and
// compares it with the one PROVENANCE.md records from Grove's commit: the
// fixtures must stay byte for byte Grove's, and every one must be recorded.
func TestGroveSamplesAreUnchanged(t *testing.T) {
	provenance, err := os.ReadFile(filepath.Join(samplesDir, "PROVENANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, rel := range sampleFiles(t) {
		if files[rel], err = os.ReadFile(filepath.Join(samplesDir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	for _, problem := range framework.ProvenanceMismatches(provenance, files) {
		t.Error(problem)
	}
}
