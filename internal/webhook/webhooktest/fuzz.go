package webhooktest

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
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

// LimitsOf are the operator's limits with maxPods pods both per replica and
// per PodCliqueSet, or DefaultLimits when maxPods is not positive, so that a
// fuzz test varies the limits with one number.
func LimitsOf(maxPods int64) configv1alpha1.LimitsConfiguration {
	if maxPods <= 0 {
		return DefaultLimits
	}
	return configv1alpha1.LimitsConfiguration{MaxPodsPerReplica: maxPods, MaxPodsPerPodCliqueSet: maxPods}
}

// ExpectCreateAndUpdate checks the rules of a kind whose update, when it
// changes the spec, is checked as a creation (PodClique,
// PodCliqueScalingGroup): the errors of validateCreate(obj) are well-formed
// and the same when asked twice; an update from old to obj that keeps the
// spec is accepted, one that changes it gets the errors of the creation;
// an update to an identical object is accepted. It returns the errors of
// the creation.
func ExpectCreateAndUpdate[T any](t *testing.T, old, obj T, deepCopy func(T) T, sameSpec func(a, b T) bool,
	validateCreate func(T) field.ErrorList, validateUpdate func(old, obj T) field.ErrorList) field.ErrorList {
	t.Helper()
	created := validateCreate(obj)
	ExpectWellFormed(t, "ValidateCreate", created)
	ExpectSameErrors(t, "ValidateCreate twice", created, validateCreate(deepCopy(obj)))

	updated := validateUpdate(old, obj)
	ExpectWellFormed(t, "ValidateUpdate", updated)
	switch {
	case !sameSpec(old, obj):
		ExpectSameErrors(t, "ValidateUpdate and ValidateCreate of a changed spec", updated, created)
	case len(updated) > 0:
		t.Fatalf("an update that keeps the spec is refused: %v", updated)
	}
	if errs := validateUpdate(obj, deepCopy(obj)); len(errs) > 0 {
		t.Fatalf("an update to the same object is refused: %v", errs)
	}
	return created
}
