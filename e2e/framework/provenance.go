package framework

import (
	"crypto/sha1" //nolint:gosec // git's blob ids are SHA-1; this checks identity, not security
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// provenanceRow is a row of a PROVENANCE.md table: | `<file>` | `<git blob id>` |
var provenanceRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([0-9a-f]{40})` \\|$")

// ProvenanceMismatches compares files copied byte for byte from another
// project (name → content) with the git blob ids their PROVENANCE.md
// records, and returns one problem per line: a file that differs or is not
// recorded, a recorded file that is missing, Windows line ends. None means
// the files are the recorded ones, all of them.
func ProvenanceMismatches(provenance []byte, files map[string][]byte) []string {
	recorded := map[string]string{}
	for _, m := range provenanceRow.FindAllStringSubmatch(string(provenance), -1) {
		recorded[m[1]] = m[2]
	}
	var out []string
	if len(files) == 0 {
		out = append(out, "no file to check")
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		content := files[name]
		if got, want := GitBlobID(content), recorded[name]; got != want {
			out = append(out, fmt.Sprintf("%s: git blob id %s, PROVENANCE.md records %q: the file differs from the original", name, got, want))
		}
		if strings.Contains(string(content), "\r\n") {
			out = append(out, fmt.Sprintf("%s has CRLF line ends", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(recorded)) {
		if _, ok := files[name]; !ok {
			out = append(out, fmt.Sprintf("PROVENANCE.md records %s, which is not there", name))
		}
	}
	return out
}

// GitBlobID is the id git gives content as a blob (git hash-object).
func GitBlobID(content []byte) string {
	h := sha1.New() //nolint:gosec // see the import
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return fmt.Sprintf("%x", h.Sum(nil))
}
