package mnnvl

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateGroup(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(GroupAnnotation)
	cases := []struct {
		value   string
		enabled bool
		want    string // "" for no error
	}{
		{value: "fabric", enabled: true},
		{value: "none", enabled: false},
		{value: "none", enabled: true},
		{value: "fabric", enabled: false, want: `metadata.annotations[grove.io/mnnvl-group]: Forbidden: MNNVL is not enabled in the operator configuration (mnnvl.enabled); only "none" is allowed`},
		{value: "Fabric_1", enabled: true, want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "Fabric_1": must be "none" or a DNS-1123 label: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{value: "", enabled: true, want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "": must be "none" or a DNS-1123 label`},
		// TrainJobs' ComputeDomains end in -mnnvl; a group may not.
		{value: "mnnvl", enabled: true, want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "mnnvl": must not be "mnnvl" or end in "-mnnvl"`},
		{value: "rack-mnnvl", enabled: true, want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "rack-mnnvl": must not be "mnnvl" or end in "-mnnvl"`},
		{value: "mnnvl-rack", enabled: true},
		{value: "rackmnnvl", enabled: true},
	}
	for _, tc := range cases {
		err := ValidateGroup(path, tc.value, tc.enabled)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q (enabled %v): unexpected %v", tc.value, tc.enabled, err)
		case tc.want != "" && (err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want):
			t.Errorf("%q (enabled %v): got %v, want %s", tc.value, tc.enabled, err, tc.want)
		}
	}
}

func TestValidateGroupUnchanged(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(GroupAnnotation)
	set := func(v string) map[string]string { return map[string]string{GroupAnnotation: v, "other": "x"} }
	cases := []struct {
		name     string
		old, new map[string]string
		want     string
	}{
		{name: "unchanged", old: set("a"), new: set("a")},
		{name: "never set, other annotations change", old: map[string]string{"other": "x"}, new: map[string]string{"other": "y"}},
		{name: "changed", old: set("a"), new: set("b"), want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "b": field is immutable (was "a")`},
		{name: "added", old: nil, new: set("none"), want: `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "none": field is immutable (was not set)`},
		{name: "removed", old: set("a"), new: nil, want: `metadata.annotations[grove.io/mnnvl-group]: Forbidden: field is immutable: cannot be removed (was "a")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateGroupUnchanged(path, tc.old, tc.new)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
