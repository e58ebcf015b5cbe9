package framework

import (
	"slices"
	"testing"
)

func TestGitBlobIDIsGits(t *testing.T) {
	// printf 'hello\n' | git hash-object --stdin
	if got, want := GitBlobID([]byte("hello\n")), "ce013625030ba8dba906f756967f9e9ca394464a"; got != want {
		t.Errorf("GitBlobID = %s, want %s", got, want)
	}
}

func TestProvenanceMismatches(t *testing.T) {
	const helloID = "ce013625030ba8dba906f756967f9e9ca394464a"
	provenance := []byte("| File | Blob |\n|---|---|\n| `a.yaml` | `" + helloID + "` |\n| `b.yaml` | `" + helloID + "` |\n")
	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  []string
	}{
		{"every file recorded and unchanged", map[string][]byte{"a.yaml": []byte("hello\n"), "b.yaml": []byte("hello\n")}, nil},
		{"a changed file", map[string][]byte{"a.yaml": []byte("hello\n"), "b.yaml": []byte("hello!\n")},
			[]string{`b.yaml: git blob id 4effa19f4f75f846c3229b9dbdbad14eff362f32, PROVENANCE.md records "` + helloID + `": the file differs from the original`}},
		{"a file not recorded", map[string][]byte{"a.yaml": []byte("hello\n"), "b.yaml": []byte("hello\n"), "c.yaml": []byte("hello\n")},
			[]string{`c.yaml: git blob id ` + helloID + `, PROVENANCE.md records "": the file differs from the original`}},
		{"a recorded file missing", map[string][]byte{"a.yaml": []byte("hello\n")}, []string{"PROVENANCE.md records b.yaml, which is not there"}},
		{"no file at all", map[string][]byte{}, []string{"no file to check", "PROVENANCE.md records a.yaml, which is not there", "PROVENANCE.md records b.yaml, which is not there"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ProvenanceMismatches(provenance, c.files); !slices.Equal(got, c.want) {
				t.Errorf("ProvenanceMismatches =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	crlf := []byte("hello\r\n")
	got := ProvenanceMismatches([]byte("| `a.yaml` | `"+GitBlobID(crlf)+"` |\n"), map[string][]byte{"a.yaml": crlf})
	if !slices.Equal(got, []string{"a.yaml has CRLF line ends"}) {
		t.Errorf("CRLF: %q", got)
	}
}
