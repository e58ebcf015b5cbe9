package clustertopologybinding

import (
	"context"
	"fmt"
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
			errs := Validate(binding(tt.levels...), Backends{})
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
	if !apierrors.IsInvalid(err) || len(warnings) != 0 ||
		!strings.Contains(err.Error(), `spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kai-scheduler": scheduler backend is not enabled in copse`) {
		t.Errorf("ValidateCreate with a KAI binding = %v, %v; want Invalid naming spec.schedulerTopologyBindings[0].schedulerName and no warning", warnings, err)
	}
	// A binding stored with one before the rule still gets its status.
	relabelled := withBackend.DeepCopy()
	relabelled.Labels = map[string]string{"team": "infra"}
	if _, err := (Validator{}).ValidateUpdate(ctx, withBackend, relabelled); err != nil {
		t.Errorf("ValidateUpdate of a stored binding's labels = %v, want nil", err)
	}
}

// TestValidateSchedulerBindings holds spec.schedulerTopologyBindings to
// Grove's rules (Grove's Test_TAS21): a backend once, one that runs, one that
// binds to a topology object of its own; none of copse's does.
func TestValidateSchedulerBindings(t *testing.T) {
	ref := func(names ...string) []grovecorev1alpha1.SchedulerTopologyBinding {
		var out []grovecorev1alpha1.SchedulerTopologyBinding
		for i, n := range names {
			out = append(out, grovecorev1alpha1.SchedulerTopologyBinding{SchedulerName: n, TopologyReference: fmt.Sprintf("topology-%d", i)})
		}
		return out
	}
	tests := []struct {
		name     string
		refs     []grovecorev1alpha1.SchedulerTopologyBinding
		backends Backends
		want     []string
	}{
		{name: "none"},
		{name: "a backend copse does not run", refs: ref("kai-scheduler"),
			want: []string{`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kai-scheduler": scheduler backend is not enabled in copse: its scheduler backends are "default-scheduler" (the kube-scheduler)`}},
		{name: "named twice: a duplicate, besides not running", refs: ref("kai-scheduler", "kai-scheduler"),
			want: []string{
				`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kai-scheduler": scheduler backend is not enabled in copse`,
				`spec.schedulerTopologyBindings[1].schedulerName: Duplicate value: "kai-scheduler": spec.schedulerTopologyBindings[0] has the same schedulerName`}},
		{name: "the kube-scheduler takes no topology object", refs: ref("default-scheduler"),
			want: []string{`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "default-scheduler": scheduler backend takes no topology object: the kube-scheduler packs gangs by the node label keys of spec.levels`}},
		{name: "Kueue, when it does not run", refs: ref("kueue"),
			want: []string{`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kueue": scheduler backend is not enabled in copse: its scheduler backends are "default-scheduler" (the kube-scheduler)`}},
		{name: "Kueue, when it runs: copse keeps its Topology", refs: ref("kueue"), backends: Backends{Kueue: true},
			want: []string{`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "kueue": scheduler backend takes no topology object from a binding: copse keeps Kueue's Topology itself`}},
		{name: "with Kueue, an unknown backend lists both", refs: ref("volcano"), backends: Backends{Kueue: true},
			want: []string{`spec.schedulerTopologyBindings[0].schedulerName: Invalid value: "volcano": scheduler backend is not enabled in copse: its scheduler backends are "default-scheduler" (the kube-scheduler) and "kueue"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := binding("rack", "topology.copse.dev/rack")
			b.Spec.SchedulerTopologyBindings = tt.refs
			errs := Validate(b, tt.backends)
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
