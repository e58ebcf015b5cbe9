package webhooktest

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ExpectWellFormed fails t unless every error names a field and says what
// is wrong with it: a detail, except for Duplicate errors, whose type and
// value say it all.
func ExpectWellFormed(t *testing.T, what string, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e == nil || e.Field == "" || (e.Detail == "" && e.Type != field.ErrorTypeDuplicate) {
			t.Fatalf("%s returned an error without a field path or a message: %#v", what, e)
		}
	}
}

// ExpectSameErrors fails t unless a and b hold the same errors as the API
// server renders them, in any order.
func ExpectSameErrors(t *testing.T, what string, a, b field.ErrorList) {
	t.Helper()
	if got, want := rendered(a), rendered(b); !slices.Equal(got, want) {
		t.Fatalf("%s: the errors differ:\n  %q\n  %q", what, got, want)
	}
}

func rendered(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}
