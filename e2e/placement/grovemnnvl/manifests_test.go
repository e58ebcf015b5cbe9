package grovemnnvl

// Checks of Grove's manifests; they need no cluster:
// go test ./e2e/placement/grovemnnvl/

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's blob ids are SHA-1; this checks identity, not security
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestManifestsAreGroves recomputes each manifest's git blob id and compares
// it with the one PROVENANCE.md records from Grove's commit: the manifests
// must stay byte for byte Grove's, and every one must be recorded.
func TestManifestsAreGroves(t *testing.T) {
	provenance, err := os.ReadFile("manifests/PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([0-9a-f]{40})` \\|$").FindAllStringSubmatch(string(provenance), -1) {
		recorded[m[1]] = m[2]
	}
	files, err := fs.Glob(manifests, "manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(recorded) != len(files) {
		t.Errorf("PROVENANCE.md records %d files, the directory holds %d", len(recorded), len(files))
	}
	for _, path := range files {
		raw, err := manifests.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := path[len("manifests/"):]
		if got, want := gitBlobID(raw), recorded[name]; got != want {
			t.Errorf("%s: git blob id %s, PROVENANCE.md records %q: the manifest differs from Grove's", name, got, want)
		}
	}
}

// TestEveryManifestIsAPodCliqueSet decodes each manifest as the specs do,
// and fails for a manifest no constant names (a spec could not apply it).
func TestEveryManifestIsAPodCliqueSet(t *testing.T) {
	named := []string{ComprehensiveBare, ComprehensiveMix, CPUWithAnnotation, GPUBare, GPUDefault, GPUInvalid, GPUOptOut}
	files, err := fs.Glob(manifests, "manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		name := path[len("manifests/"):]
		if !slices.Contains(named, name) {
			t.Errorf("%s is named by no constant", name)
		}
	}
	for _, name := range named {
		pcs, err := Manifest(name, "ns", "renamed")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if pcs.GetName() != "renamed" || pcs.GetNamespace() != "ns" || pcs.GetAPIVersion() != "grove.io/v1alpha1" {
			t.Errorf("%s: %s %s/%s", name, pcs.GetAPIVersion(), pcs.GetNamespace(), pcs.GetName())
		}
		// copse's types know every field Grove's manifest sets.
		raw, err := json.Marshal(pcs.Object)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&copsev1alpha1.PodCliqueSet{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func gitBlobID(content []byte) string {
	h := sha1.New() //nolint:gosec // see the import
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return fmt.Sprintf("%x", h.Sum(nil))
}
