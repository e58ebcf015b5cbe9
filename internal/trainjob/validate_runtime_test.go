package trainjob

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func TestValidateRuntime(t *testing.T) {
	cases := []struct {
		name      string
		runtime   Runtime
		wantField string // "" for valid
	}{
		{"a trainer step with its node container", runtimeWith(nil, replicatedJob("node", AncestorTrainer, NodeName)), ""},
		{"a trainer step without a node container",
			runtimeWith(nil, replicatedJob("node", AncestorTrainer, "main")),
			"spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"},
		{"a step of several Jobs", func() Runtime {
			r := runtimeWith(nil, replicatedJob("d", AncestorDatasetInitializer, DatasetInitializerName))
			r.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 2
			return r
		}(), "spec.template.spec.replicatedJobs[0].replicas"},
		{"a job that is no step may have any shape", func() Runtime {
			r := runtimeWith(nil, replicatedJob("sidecar", "", "x"))
			r.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 3
			return r
		}(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateRuntime(&tc.runtime.Spec)
			switch {
			case tc.wantField == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.wantField != "" && (len(errs) != 1 || errs[0].Field != tc.wantField):
				t.Errorf("errors %v, want one on %s", errs, tc.wantField)
			}
		})
	}
}

func TestRuntimeWarnings(t *testing.T) {
	for ttl, warns := range map[int32]bool{0: true, 59: true, 60: false, 3600: false} {
		spec := &trainerv1alpha1.TrainingRuntimeSpec{TTLSecondsAfterFinished: ptr.To(ttl)}
		got := RuntimeWarnings(spec)
		if (len(got) > 0) != warns || (warns && !strings.Contains(got[0], "spec.ttlSecondsAfterFinished")) {
			t.Errorf("TTL %d: warnings %v", ttl, got)
		}
	}
	if got := RuntimeWarnings(&trainerv1alpha1.TrainingRuntimeSpec{}); len(got) != 0 {
		t.Errorf("no TTL: warnings %v", got)
	}
}
