package topology

import (
	"slices"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestConstraintPaths(t *testing.T) {
	rack := func() *grovecorev1alpha1.TopologyConstraint {
		return &grovecorev1alpha1.TopologyConstraint{Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	}
	clique := func(name string, c *grovecorev1alpha1.TopologyConstraint) *grovecorev1alpha1.PodCliqueTemplateSpec {
		return &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, TopologyConstraint: c}
	}
	tests := []struct {
		name string
		edit func(*copsev1alpha1.PodCliqueSet)
		want []string
	}{
		{name: "none", edit: func(*copsev1alpha1.PodCliqueSet) {}},
		{name: "every scope, broadest first", edit: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = rack()
			p.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("a", nil), clique("b", rack())}
			p.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "g0", CliqueNames: []string{"a"}}, {Name: "g1", CliqueNames: []string{"b"}, TopologyConstraint: rack()}}
		}, want: []string{
			"spec.template.topologyConstraint",
			"spec.template.podCliqueScalingGroups[1].topologyConstraint",
			"spec.template.cliques[1].topologyConstraint",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs := &copsev1alpha1.PodCliqueSet{}
			tt.edit(pcs)
			var got []string
			for _, p := range ConstraintPaths(pcs) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ConstraintPaths = %v, want %v", got, tt.want)
			}
			if Constrained(pcs) != (len(tt.want) > 0) {
				t.Errorf("Constrained = %v, want %v", Constrained(pcs), len(tt.want) > 0)
			}
		})
	}
}
