package grovemnnvl

// Checks of Grove's manifests; they need no cluster:
// go test ./e2e/placement/grovemnnvl/

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"slices"
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

// TestManifestsAreGroves recomputes each manifest's git blob id and compares
// it with the one PROVENANCE.md records from Grove's commit: the manifests
// must stay byte for byte Grove's, and every one must be recorded.
func TestManifestsAreGroves(t *testing.T) {
	provenance, err := os.ReadFile("manifests/PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := fs.Glob(manifests, "manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, path := range paths {
		if files[path[len("manifests/"):]], err = manifests.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	for _, problem := range framework.ProvenanceMismatches(provenance, files) {
		t.Error(problem)
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
