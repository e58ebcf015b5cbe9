package podclique

import (
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestDiscoveryEnvStandaloneHasNoGroupVariables(t *testing.T) {
	vars := discoveryEnv(cliqueIdentity{podCliqueSet: "llm", replica: 0}, "llm-0-leader", "ml", 0, 7)
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

func TestScalingGroupPods(t *testing.T) {
	template := testPodCliqueSet(copsev1alpha1.WorkloadTypeInference).Spec.Template
	broken := *template.DeepCopy()
	broken.PodCliqueScalingGroupConfigs[0].CliqueNames = append(broken.PodCliqueScalingGroupConfigs[0].CliqueNames, "ghost")
	cases := []struct {
		name     string
		template grovecorev1alpha1.PodCliqueSetTemplateSpec
		clique   string
		want     int32
		wantErr  string
	}{
		{"sum of the group's cliques", template, "worker", 5, ""},
		{"the same for every member", template, "prefill", 5, ""},
		{"a standalone clique is in no group", template, "leader", 0, `clique "leader"`},
		{"a member the template lacks", broken, "worker", 0, `"ghost"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := scalingGroupPods(c.template, c.clique)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %s", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
