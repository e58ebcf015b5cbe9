package inference_test

// Unit checks of the Grove sample fixtures; they need no cluster:
// go test ./e2e/inference/ -run 'TestGroveSamples|TestEveryGroveSample'

import (
	"crypto/sha1" //nolint:gosec // git's blob ids are SHA-1; this checks identity, not security
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	recorded := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([0-9a-f]{40})` \\|$").FindAllStringSubmatch(string(provenance), -1) {
		recorded[m[1]] = m[2]
	}
	files := sampleFiles(t)
	if len(recorded) != len(files) {
		t.Errorf("PROVENANCE.md records %d files, the directory holds %d", len(recorded), len(files))
	}
	for _, rel := range files {
		raw, err := os.ReadFile(filepath.Join(samplesDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := gitBlobID(raw), recorded[rel]; got != want {
			t.Errorf("%s: git blob id %s, PROVENANCE.md records %q: the fixture differs from Grove's", rel, got, want)
		}
		if strings.Contains(string(raw), "\r\n") {
			t.Errorf("%s has CRLF line ends", rel)
		}
	}
}

func gitBlobID(content []byte) string {
	h := sha1.New() //nolint:gosec // see the import
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return fmt.Sprintf("%x", h.Sum(nil))
}
