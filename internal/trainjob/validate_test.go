package trainjob

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// TestValidateRuntimePatches: a runtime patch is checked against the runtime
// as it is, not against the template it has already been merged into (where
// every job and container it names exists).
func TestValidateRuntimePatches(t *testing.T) {
	patch := func(manager, job string, spec trainerv1alpha1.PodSpecPatch) trainerv1alpha1.RuntimePatch {
		return trainerv1alpha1.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
			Template: &trainerv1alpha1.JobSetTemplatePatch{Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
				Name: job, Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
					Template: &trainerv1alpha1.PodTemplatePatch{Spec: &spec}}}}}}}}}
	}
	scheduling := trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}}
	env := []corev1.EnvVar{{Name: "A", Value: "1"}}
	cases := []struct {
		name      string
		patches   []trainerv1alpha1.RuntimePatch
		wantField string // "" for valid
		wantText  string
	}{
		{"scheduling of a job the runtime has", []trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", NodeName, scheduling)}, "", ""},
		{"a job the runtime does not have",
			[]trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", "ghost", scheduling)},
			"spec.runtimePatches", "replicatedJob that doesn't exist in the runtime: ghost"},
		{"a container the job does not have",
			[]trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", NodeName, trainerv1alpha1.PodSpecPatch{
				Containers: []trainerv1alpha1.ContainerPatch{{Name: "sidecar", Env: env}}})},
			"spec.runtimePatches", "container that doesn't exist in the runtime job node"},
		{"an init container the job does not have",
			[]trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", NodeName, trainerv1alpha1.PodSpecPatch{
				InitContainers: []trainerv1alpha1.ContainerPatch{{Name: "warmup", Env: env}}})},
			"spec.runtimePatches", "initContainer that doesn't exist in the runtime job node"},
		{"env of the node container",
			[]trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", NodeName, trainerv1alpha1.PodSpecPatch{
				Containers: []trainerv1alpha1.ContainerPatch{{Name: NodeName, Env: env}}})},
			"spec.runtimePatches", "must not have envs"},
		{"the second manager is no domain-prefixed path",
			[]trainerv1alpha1.RuntimePatch{patch("kueue.x-k8s.io/manager", NodeName, scheduling), patch("kueue", NodeName, scheduling)},
			"spec.runtimePatches[1].manager", "domain-prefixed path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainerv1alpha1.TrainJob{Spec: trainerv1alpha1.TrainJobSpec{RuntimePatches: tc.patches}}
			plan, err := NewPlan(tj, runtimeWith(nil, replicatedJob(NodeName, AncestorTrainer, NodeName)))
			if err != nil {
				t.Fatal(err)
			}
			errs := Validate(plan)
			switch {
			case tc.wantField == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.wantField != "" && (len(errs) != 1 || errs[0].Field != tc.wantField || !strings.Contains(errs[0].Detail, tc.wantText)):
				t.Errorf("errors %v, want one on %s saying %q", errs, tc.wantField, tc.wantText)
			}
		})
	}
}
