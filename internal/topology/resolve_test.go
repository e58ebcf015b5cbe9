package topology

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func binding() *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	b.Name = "fleet"
	b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{
		{Domain: "zone", Key: "topology.kubernetes.io/zone"},
		{Domain: "block", Key: "example.com/block"},
		{Domain: "rack", Key: "example.com/rack"},
		{Domain: "host", Key: "kubernetes.io/hostname"},
	}
	return b
}

func pack(name string, required, preferred grovecorev1alpha1.TopologyDomain) *grovecorev1alpha1.TopologyConstraint {
	return &grovecorev1alpha1.TopologyConstraint{TopologyName: name,
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: required, PreferredDomain: preferred}}
}

// pcs has a standalone clique "router" and a scaling group "workers" of
// cliques "leader" and "worker".
func pcs(mutate func(*copsev1alpha1.PodCliqueSet)) *copsev1alpha1.PodCliqueSet {
	p := &copsev1alpha1.PodCliqueSet{}
	p.Name = "llm"
	p.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "router"}, {Name: "leader"}, {Name: "worker"}}
	p.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{Name: "workers", CliqueNames: []string{"leader", "worker"}}}
	mutate(p)
	return p
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name     string
		pcs      *copsev1alpha1.PodCliqueSet
		binding  *copsev1alpha1.ClusterTopologyBinding
		want     Resolved
		problems []string
	}{
		{
			name:    "no constraint",
			pcs:     pcs(func(*copsev1alpha1.PodCliqueSet) {}),
			binding: nil,
			want:    Resolved{ScalingGroups: map[string]Pack{}, Cliques: map[string]Pack{}},
		},
		{
			name: "each scope maps to its own keys; the name is inherited",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("fleet", "block", "rack")
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "rack", "")
				p.Spec.Template.Cliques[2].TopologyConstraint = pack("", "", "host")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet",
				Replica:       Pack{RequiredKey: "example.com/block", PreferredKey: "example.com/rack"},
				ScalingGroups: map[string]Pack{"workers": {RequiredKey: "example.com/rack"}},
				Cliques:       map[string]Pack{"router": {}, "leader": {}, "worker": {PreferredKey: "kubernetes.io/hostname"}}},
		},
		{
			name: "deprecated packDomain counts as required",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet", PackDomain: "rack"}
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", Replica: Pack{RequiredKey: "example.com/rack"},
				ScalingGroups: map[string]Pack{"workers": {}}, Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {}}},
		},
		{
			name: "unknown binding",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].TopologyConstraint = pack("nowhere", "rack", "")
			}),
			want:     Resolved{TopologyName: "nowhere", ScalingGroups: map[string]Pack{}, Cliques: map[string]Pack{}},
			problems: []string{`ClusterTopologyNotFound: spec.template.cliques[0].topologyConstraint.topologyName: Not found: "nowhere"`},
		},
		{
			name: "no name anywhere",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("", "rack", "")
			}),
			binding:  binding(),
			want:     Resolved{ScalingGroups: map[string]Pack{}, Cliques: map[string]Pack{}},
			problems: []string{"TopologyNameMissing: spec.template.topologyConstraint.topologyName: Required value: pack needs the name of a ClusterTopologyBinding, here or on a parent"},
		},
		{
			name: "a level the binding lacks; the valid scopes are kept",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("fleet", "zone", "")
				p.Spec.Template.Cliques[0].TopologyConstraint = pack("", "numa", "")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", Replica: Pack{RequiredKey: "topology.kubernetes.io/zone"},
				ScalingGroups: map[string]Pack{"workers": {}}, Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {}}},
			problems: []string{`ClusterTopologyLevelsUnavailable: spec.template.cliques[0].topologyConstraint.pack.required: Unsupported value: "numa": supported values: "zone", "block", "rack", "host"`},
		},
		{
			name: "a clique broader than its scaling group",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("fleet", "rack", "")
				p.Spec.Template.Cliques[1].TopologyConstraint = pack("", "block", "")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", ScalingGroups: map[string]Pack{"workers": {RequiredKey: "example.com/rack"}},
				Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {}}},
			problems: []string{`ClusterTopologyLevelsUnavailable: spec.template.cliques[1].topologyConstraint.pack.required: Invalid value: "block": must be rack or narrower: a child's constraint may not be broader than its parent's`},
		},
		{
			name: "a scaling group broader than the set",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "")
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "zone", "")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", Replica: Pack{RequiredKey: "example.com/rack"},
				ScalingGroups: map[string]Pack{"workers": {}}, Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {}}},
			problems: []string{`ClusterTopologyLevelsUnavailable: spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required: Invalid value: "zone": must be rack or narrower: a child's constraint may not be broader than its parent's`},
		},
		{
			name: "preferred broader than required",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "zone")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", ScalingGroups: map[string]Pack{"workers": {}},
				Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {}}},
			problems: []string{`ClusterTopologyLevelsUnavailable: spec.template.topologyConstraint.pack.preferred: Invalid value: "zone": must be rack or narrower: a preferred domain broader than the required one cannot be preferred`},
		},
		{
			name: "two bindings in one set",
			pcs: pcs(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = pack("fleet", "rack", "")
				p.Spec.Template.Cliques[0].TopologyConstraint = pack("other", "host", "")
			}),
			binding: binding(),
			want: Resolved{TopologyName: "fleet", Replica: Pack{RequiredKey: "example.com/rack"},
				ScalingGroups: map[string]Pack{"workers": {}}, Cliques: map[string]Pack{"router": {RequiredKey: "kubernetes.io/hostname"}, "leader": {}, "worker": {}}},
			problems: []string{`ClusterTopologyNotFound: spec.template.cliques[0].topologyConstraint.topologyName: Invalid value: "other": a PodCliqueSet uses one ClusterTopologyBinding; "fleet" is already named by a broader scope`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := Resolve(tc.pcs, tc.binding)
			expectResolved(t, tc.want, got, tc.problems, problems)
		})
	}
}

func TestPacking(t *testing.T) {
	constrained := pcs(func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.TopologyConstraint = pack("fleet", "block", "")
		p.Spec.Template.Cliques[2].TopologyConstraint = pack("", "host", "")
	})
	cases := []struct {
		name     string
		pcs      *copsev1alpha1.PodCliqueSet
		enabled  bool
		want     Resolved
		problems []string
	}{
		{
			name:    "enabled: Resolve",
			pcs:     constrained,
			enabled: true,
			want: Resolved{TopologyName: "fleet", Replica: Pack{RequiredKey: "example.com/block"},
				ScalingGroups: map[string]Pack{"workers": {}}, Cliques: map[string]Pack{"router": {}, "leader": {}, "worker": {RequiredKey: "kubernetes.io/hostname"}}},
		},
		{
			name: "disabled: nothing applied, every constrained scope named",
			pcs:  constrained,
			want: Resolved{},
			problems: []string{
				"TopologyAwareSchedulingDisabled: spec.template.topologyConstraint: Forbidden: " + DisabledMessage,
				"TopologyAwareSchedulingDisabled: spec.template.cliques[2].topologyConstraint: Forbidden: " + DisabledMessage,
			},
		},
		{
			name: "disabled without constraints: no problem",
			pcs:  pcs(func(*copsev1alpha1.PodCliqueSet) {}),
			want: Resolved{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := Packing(tc.pcs, binding(), tc.enabled)
			expectResolved(t, tc.want, got, tc.problems, problems)
		})
	}
}

// expectResolved compares a resolution and its problems, each problem as
// "<reason>: <field error>".
func expectResolved(t *testing.T, want, got Resolved, wantProblems []string, problems []Problem) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	var texts []string
	for _, p := range problems {
		texts = append(texts, p.Reason+": "+p.String())
	}
	if diff := cmp.Diff(wantProblems, texts); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
