package kueue

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkloadName(t *testing.T) {
	if got := WorkloadName("pretrain"); got != "podcliqueset-pretrain" {
		t.Errorf("WorkloadName(pretrain) = %q, want podcliqueset-pretrain", got)
	}
	long := strings.Repeat("a", 250)
	longer := long + "b"
	a, b := WorkloadName(long), WorkloadName(longer)
	for _, name := range []string{a, b} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("WorkloadName gave %q: %v", name, errs)
		}
	}
	if a == b {
		t.Errorf("two long names share the Workload %q", a)
	}
}
