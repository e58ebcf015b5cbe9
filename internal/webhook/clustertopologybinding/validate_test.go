package clustertopologybinding

import (
	"context"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func binding(levels ...string) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	b.Name = "fleet"
	for i := 0; i+1 < len(levels); i += 2 {
		b.Spec.Levels = append(b.Spec.Levels, grovecorev1alpha1.TopologyLevel{
			Domain: grovecorev1alpha1.TopologyDomain(levels[i]), Key: levels[i+1]})
	}
	return b
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		levels []string
		// want is each error as the client sees it, in order.
		want []string
	}{
		{name: "distinct domains and keys",
			levels: []string{"zone", "topology.kubernetes.io/zone", "rack", "topology.copse.dev/rack", "host", "kubernetes.io/hostname"}},
		{name: "duplicate domain names the later level and the first",
			levels: []string{"rack", "a.example/rack", "host", "kubernetes.io/hostname", "rack", "b.example/rack"},
			want:   []string{`spec.levels[2].domain: Duplicate value: "rack": spec.levels[0] has the same domain: each level's domain is unique`}},
		{name: "duplicate key",
			levels: []string{"rack", "topology.copse.dev/rack", "clique", "topology.copse.dev/rack"},
			want:   []string{`spec.levels[1].key: Duplicate value: "topology.copse.dev/rack": spec.levels[0] has the same key: each level's key is unique`}},
		{name: "a level repeated whole is two errors",
			levels: []string{"rack", "topology.copse.dev/rack", "rack", "topology.copse.dev/rack"},
			want: []string{
				`spec.levels[1].domain: Duplicate value: "rack"`,
				`spec.levels[1].key: Duplicate value: "topology.copse.dev/rack"`}},
		{name: "a key whose prefix is not a DNS subdomain",
			levels: []string{"rack", "Example_Corp/rack"},
			want:   []string{`spec.levels[0].key: Invalid value: "Example_Corp/rack": must be a node label key: prefix part a lowercase RFC 1123 subdomain`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Validate(binding(tt.levels...))
			if len(errs) != len(tt.want) {
				t.Fatalf("Validate = %v, want %d errors: %v", errs, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to start with %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestValidatorAdmission(t *testing.T) {
	ctx := context.Background()
	bad := binding("rack", "topology.copse.dev/rack", "rack", "kubernetes.io/hostname")
	_, err := Validator{}.ValidateCreate(ctx, bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `ClusterTopologyBinding.grove.io "fleet" is invalid: spec.levels[1].domain`) {
		t.Errorf("ValidateCreate = %v, want Invalid naming spec.levels[1].domain", err)
	}

	// A stored binding that breaks a rule can still get status and labels.
	labelled := bad.DeepCopy()
	labelled.Labels = map[string]string{"team": "infra"}
	if _, err := (Validator{}).ValidateUpdate(ctx, bad, labelled); err != nil {
		t.Errorf("ValidateUpdate without a spec change = %v, want nil", err)
	}
	if _, err := (Validator{}).ValidateUpdate(ctx, binding("rack", "topology.copse.dev/rack"), bad); !apierrors.IsInvalid(err) {
		t.Errorf("ValidateUpdate to a duplicate domain = %v, want Invalid", err)
	}

	withBackend := binding("rack", "topology.copse.dev/rack")
	withBackend.Spec.SchedulerTopologyBindings = []grovecorev1alpha1.SchedulerTopologyBinding{{SchedulerName: "kai-scheduler", TopologyReference: "t"}}
	warnings, err := Validator{}.ValidateCreate(ctx, withBackend)
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "spec.schedulerTopologyBindings is ignored") {
		t.Errorf("ValidateCreate with schedulerTopologyBindings = %v, %v; want one warning naming the field", warnings, err)
	}
}
