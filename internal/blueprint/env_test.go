package blueprint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestDiscoveryEnvStandaloneHasNoGroupVariables(t *testing.T) {
	vars := discoveryEnv(CliqueIdentity{PodCliqueSet: "llm", Replica: 0}, "llm-0-leader", "ml", 0, 7)
	for _, v := range vars {
		if strings.HasPrefix(v.Name, "GROVE_PCSG_") {
			t.Errorf("standalone clique got %s", v.Name)
		}
	}
	if len(vars) != 5 {
		t.Errorf("got %d variables, want 5", len(vars))
	}
}

func TestAddMissingEnv(t *testing.T) {
	containers := []corev1.Container{
		{Name: "a"},
		{Name: "b", Env: []corev1.EnvVar{{Name: "X", Value: "user"}, {Name: "OTHER", Value: "o"}}},
	}
	addMissingEnv(containers, []corev1.EnvVar{{Name: "X", Value: "copse"}, {Name: "Y", Value: "copse"}})
	want := [][]corev1.EnvVar{
		{{Name: "X", Value: "copse"}, {Name: "Y", Value: "copse"}},
		{{Name: "X", Value: "user"}, {Name: "OTHER", Value: "o"}, {Name: "Y", Value: "copse"}},
	}
	for i, c := range containers {
		if diff := cmp.Diff(want[i], c.Env); diff != "" {
			t.Errorf("container %s (-want +got):\n%s", c.Name, diff)
		}
	}
}
