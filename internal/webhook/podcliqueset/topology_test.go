package podcliqueset

import (
	"context"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// fleet is a binding with the simulated cluster's levels.
func fleet() *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	for _, l := range [][2]string{{"zone", "topology.kubernetes.io/zone"}, {"block", "topology.copse.dev/block"},
		{"rack", "topology.copse.dev/rack"}, {"host", "kubernetes.io/hostname"}} {
		b.Spec.Levels = append(b.Spec.Levels, grovecorev1alpha1.TopologyLevel{Domain: grovecorev1alpha1.TopologyDomain(l[0]), Key: l[1]})
	}
	return b
}

func pack(name, required string) *grovecorev1alpha1.TopologyConstraint {
	return &grovecorev1alpha1.TopologyConstraint{TopologyName: name,
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: grovecorev1alpha1.TopologyDomain(required)}}
}

// packed sets constraints on the template, the scaling group "decode" and
// the clique "worker" (index 1, in that group); nil leaves a scope unset.
func packed(template, group, clique *grovecorev1alpha1.TopologyConstraint) *copsev1alpha1.PodCliqueSet {
	return valid(func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.TopologyConstraint = template
		p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = group
		p.Spec.Template.Cliques[1].TopologyConstraint = clique
	})
}

func TestValidateTopology(t *testing.T) {
	tests := []struct {
		name    string
		pcs     *copsev1alpha1.PodCliqueSet
		binding *copsev1alpha1.ClusterTopologyBinding
		enabled bool
		want    []string
	}{
		{name: "no constraint, disabled", pcs: valid(), enabled: false},
		{name: "no constraint, enabled", pcs: valid(), enabled: true},
		{name: "disabled: every constraint refused",
			pcs: packed(pack("fleet", "block"), nil, pack("", "host")), binding: fleet(), enabled: false,
			want: []string{
				"spec.template.topologyConstraint: Forbidden: " + topologyDisabled,
				"spec.template.cliques[1].topologyConstraint: Forbidden: " + topologyDisabled,
			}},
		{name: "valid at every scope, narrowing downward",
			pcs: packed(pack("fleet", "block"), pack("", "rack"), pack("", "host")), binding: fleet(), enabled: true},
		{name: "unknown topologyName",
			pcs: packed(pack("nowhere", "rack"), nil, nil), enabled: true,
			want: []string{`spec.template.topologyConstraint.topologyName: Not found: "nowhere"`}},
		{name: "missing topologyName",
			pcs: packed(nil, pack("", "rack"), nil), binding: fleet(), enabled: true,
			want: []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.topologyName: Required value"}},
		{name: "a level the binding lacks",
			pcs: packed(pack("fleet", "numa"), nil, nil), binding: fleet(), enabled: true,
			want: []string{`spec.template.topologyConstraint.pack.required: Unsupported value: "numa": supported values: "zone", "block", "rack", "host"`}},
		{name: "child broader than its parent",
			pcs: packed(nil, pack("fleet", "rack"), pack("", "zone")), binding: fleet(), enabled: true,
			want: []string{`spec.template.cliques[1].topologyConstraint.pack.required: Invalid value: "zone": must be rack or narrower`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateTopology(tt.pcs, tt.binding, tt.enabled)
			if len(errs) != len(tt.want) {
				t.Fatalf("ValidateTopology = %v, want %d errors: %v", errs, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to start with %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

// TestValidatorTopology checks the reads around ValidateTopology: the
// binding is read by name on create, a missing one is NotFound, and
// updates are not checked (the constraints are immutable).
func TestValidatorTopology(t *testing.T) {
	ctx := context.Background()
	pcs := packed(pack("fleet", "rack"), nil, nil)
	withBinding := Validator{Limits: webhooktest.DefaultLimits, TopologyAwareScheduling: true, Reader: webhooktest.Reader(t, fleet())}
	if _, err := withBinding.ValidateCreate(ctx, pcs); err != nil {
		t.Errorf("create with the binding present = %v, want allowed", err)
	}

	without := Validator{Limits: webhooktest.DefaultLimits, TopologyAwareScheduling: true, Reader: webhooktest.Reader(t)}
	_, err := without.ValidateCreate(ctx, pcs)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.template.topologyConstraint.topologyName: Not found: "fleet"`) {
		t.Errorf("create naming a missing binding = %v, want Invalid naming topologyName", err)
	}
	changed := pcs.DeepCopy()
	changed.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/other:2"
	if _, err := without.ValidateUpdate(ctx, pcs, changed); err != nil {
		t.Errorf("update naming a missing binding = %v, want allowed: only creations are checked", err)
	}

	// Disabled: refused without any read (no reader at all).
	disabled := Validator{Limits: webhooktest.DefaultLimits}
	if _, err := disabled.ValidateCreate(ctx, pcs); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), topologyDisabled) {
		t.Errorf("create while disabled = %v, want Invalid saying %q", err, topologyDisabled)
	}
	if _, err := (Validator{Limits: webhooktest.DefaultLimits, TopologyAwareScheduling: true}).ValidateCreate(ctx, pcs); !apierrors.IsInternalError(err) {
		t.Errorf("create with no reader = %v, want an internal error", err)
	}
}

// TestValidatorRefusesPackingKueueCannotExpress: a new PodCliqueSet queued
// through Kueue whose packing Kueue cannot express (here the replica's
// several cliques packed in one rack, more than Kueue's pod set group of a
// leader and its workers) is refused at creation, naming the field; the
// same PodCliqueSet outside a queue, or with Kueue off, is not.
func TestValidatorRefusesPackingKueueCannotExpress(t *testing.T) {
	ctx := context.Background()
	queued := packed(pack("fleet", "rack"), nil, nil)
	queued.Labels = map[string]string{kueue.QueueNameLabel: "team-a"}
	unqueued := packed(pack("fleet", "rack"), nil, nil)
	on := Validator{Limits: webhooktest.DefaultLimits, TopologyAwareScheduling: true, KueueEnabled: true, Reader: webhooktest.Reader(t, fleet())}
	off := on
	off.KueueEnabled = false

	_, err := on.ValidateCreate(ctx, queued)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing") {
		t.Errorf("create in a queue = %v, want Invalid naming spec.template.topologyConstraint", err)
	}
	if _, err := on.ValidateCreate(ctx, unqueued); err != nil {
		t.Errorf("create outside a queue = %v, want allowed", err)
	}
	if _, err := off.ValidateCreate(ctx, queued); err != nil {
		t.Errorf("create in a queue with Kueue off = %v, want allowed", err)
	}
}
