// Package webhooktest helps the webhook packages' tests compare field
// errors with the messages users see, and builds the owner chains (a
// PodCliqueSet, its PodCliqueScalingGroup and PodCliques) and the fake API
// reader the Training rules look owners up with.
package webhooktest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// DefaultLimits are the operator's default limits on pods, for validators
// under test.
var DefaultLimits = configv1alpha1.NewDefaultOperatorConfiguration().Limits

// ExpectErrors fails t unless errs has exactly one error per element of
// want, in order, each error's message (as the API server renders it)
// containing that element.
func ExpectErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n  got:  %s\n  want: %s", len(got), len(want),
			strings.Join(got, "\n        "), strings.Join(want, "\n        "))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("error %d = %q\n  want it to contain %q", i, got[i], want[i])
		}
	}
}
