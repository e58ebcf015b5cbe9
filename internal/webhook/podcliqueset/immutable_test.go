package podcliqueset

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func rackConstraint() *grovecorev1alpha1.TopologyConstraint {
	return &grovecorev1alpha1.TopologyConstraint{Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
}

func swapCliques(i, j int) func(*copsev1alpha1.PodCliqueSet) {
	return func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[i], p.Spec.Template.Cliques[j] = p.Spec.Template.Cliques[j], p.Spec.Template.Cliques[i]
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name string
		old  *copsev1alpha1.PodCliqueSet
		new  *copsev1alpha1.PodCliqueSet
		want []string
	}{
		// Allowed changes.
		{name: "a new image", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
		})},
		{name: "more replicas of the set, a clique and a scaling group", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Replicas = 3
			p.Spec.Template.Cliques[2].Spec.Replicas = 5
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
		})},
		{name: "reordering cliques that start in any order", old: valid(), new: valid(swapCliques(0, 2))},
		{name: "reordering a scaling group's members", old: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "router"}
		}), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"router", "worker"}
		})},
		{name: "an unchanged spec is accepted even if it breaks a rule", old: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](9)
		}), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](9)
			p.Labels = map[string]string{"team": "serving"}
			p.Finalizers = []string{"example.com/cleanup"}
		})},
		{name: "a nodeName already stored may stay", old: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1"
		}), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1"
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
		})},

		// The rules of a new object still apply.
		{name: "a changed spec must still be valid", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.Replicas = 1
		}), want: []string{"spec.template.cliques[2].spec.minAvailable: Invalid value: 2: must not be greater than spec.template.cliques[2].spec.replicas (1)"}},
		{name: "a nodeName cannot be added", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1"
		}), want: []string{"spec.template.cliques[0].spec.podSpec.nodeName: Forbidden"}},
		{name: "topologySpreadConstraints cannot be added", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1}}
		}), want: []string{"spec.template.cliques[0].spec.podSpec.topologySpreadConstraints: Forbidden"}},

		// Clique composition.
		{name: "adding a clique", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			extra := p.Spec.Template.Cliques[0].DeepCopy()
			extra.Name, extra.Spec.RoleName = "extra", "extra"
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, extra)
		}), want: []string{`spec.template.cliques[3].name: Forbidden: cliques cannot be added or renamed after creation: "extra" is not one of ["leader" "worker" "router"]`}},
		{name: "removing a clique", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = p.Spec.Template.Cliques[:2]
		}), want: []string{`spec.template.cliques: Forbidden: cliques cannot be removed after creation: "router" is missing`}},
		{name: "renaming a clique", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Name = "gateway"
		}), want: []string{
			`spec.template.cliques[2].name: Forbidden: cliques cannot be added or renamed after creation: "gateway" is not one of`,
			`spec.template.cliques: Forbidden: cliques cannot be removed after creation: "router" is missing`,
		}},
		{name: "reordering cliques that start in order", old: valid(inOrderStartup), new: valid(inOrderStartup, swapCliques(0, 2)),
			want: []string{
				`spec.template.cliques[0].name: Forbidden: cliques cannot be reordered when spec.template.cliqueStartupType is CliqueStartupTypeInOrder: "router" was at index 2`,
				`spec.template.cliques[2].name: Forbidden: cliques cannot be reordered when spec.template.cliqueStartupType is CliqueStartupTypeInOrder: "leader" was at index 0`,
			}},
		{name: "reordering cliques with explicit dependencies", old: valid(explicitStartup), new: valid(explicitStartup, swapCliques(0, 1)),
			want: []string{
				`spec.template.cliques[0].name: Forbidden: cliques cannot be reordered when spec.template.cliqueStartupType is CliqueStartupTypeExplicit`,
				`spec.template.cliques[1].name: Forbidden: cliques cannot be reordered`,
			}},
		{name: "the startup type", old: valid(), new: valid(inOrderStartup),
			want: []string{`spec.template.cliqueStartupType: Invalid value: "CliqueStartupTypeInOrder": field is immutable`}},

		// Immutable clique fields.
		{name: "a clique's roleName", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.RoleName = "head"
		}), want: []string{`spec.template.cliques[0].spec.roleName: Invalid value: "head": field is immutable`}},
		{name: "a Training clique's minAvailable", old: validOf(copsev1alpha1.WorkloadTypeTraining), new: validOf(copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](2)
		}), want: []string{"spec.template.cliques[1].spec.minAvailable: Invalid value: 2: field is immutable"}},
		{name: "an Inference clique's minAvailable may change", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](2)
		})},
		{name: "an Inference clique's minAvailable is still checked against its replicas", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To(p.Spec.Template.Cliques[1].Spec.Replicas + 1)
		}), want: []string{"spec.template.cliques[1].spec.minAvailable: Invalid value"}},
		{name: "a clique's startsAfter", old: valid(explicitStartup), new: valid(explicitStartup, startsAfter(1, "leader")),
			want: []string{`spec.template.cliques[1].spec.startsAfter: Invalid value: ["leader"]: field is immutable`}},
		{name: "a clique's scheduler", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "other"
			}
		}), want: []string{
			`spec.template.cliques[0].spec.podSpec.schedulerName: Invalid value: "other": field is immutable`,
			`spec.template.cliques[1].spec.podSpec.schedulerName: Invalid value: "other": field is immutable`,
			`spec.template.cliques[2].spec.podSpec.schedulerName: Invalid value: "other": field is immutable`,
		}},
		{name: "a clique's topology constraint", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = rackConstraint()
		}), want: []string{`spec.template.cliques[0].topologyConstraint: Invalid value: {"pack":{"required":"rack"}}: field is immutable`}},
		{name: "a clique's shared claims", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{sharing("gpu")}
		}), want: []string{"spec.template.cliques[0].resourceSharing: Invalid value"}},

		// Template fields.
		{name: "the set's topology constraint", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = rackConstraint()
		}), want: []string{"spec.template.topologyConstraint: Invalid value"}},
		{name: "the set's claim templates", old: valid(), new: valid(withClaimTemplate("gpu")),
			want: []string{"spec.template.resourceClaimTemplates: Invalid value"}},
		{name: "the set's shared claims", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: sharing("gpu")}}
		}), want: []string{"spec.template.resourceSharing: Invalid value"}},

		// Scaling groups.
		{name: "adding a scaling group", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "prefill", CliqueNames: []string{"router"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)})
		}), want: []string{`spec.template.podCliqueScalingGroups[1].name: Forbidden: scaling groups cannot be added or renamed after creation: "prefill" is not one of ["decode"]`}},
		{name: "removing a scaling group", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = nil
		}), want: []string{`spec.template.podCliqueScalingGroups: Forbidden: scaling groups cannot be removed after creation: "decode" is missing`}},
		{name: "a scaling group's members", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "router"}
		}), want: []string{`spec.template.podCliqueScalingGroups[0].cliqueNames: Invalid value: ["worker","router"]: field is immutable: the members of a scaling group cannot change after creation (were ["worker"])`}},
		{name: "a Training scaling group's minAvailable", old: validOf(copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
		}), new: validOf(copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](2)
		}), want: []string{"spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value: 2: field is immutable"}},
		{name: "an Inference scaling group's minAvailable may change", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](2)
		})},
		{name: "an Inference scaling group's minAvailable is still checked against its replicas", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](5)
		}), want: []string{"spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value"}},
		{name: "a scaling group's topology constraint", old: valid(), new: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = rackConstraint()
		}), want: []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint: Invalid value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateUpdate(tc.old, tc.new), tc.want)
		})
	}
}

func inOrderStartup(pcs *copsev1alpha1.PodCliqueSet) {
	pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
}
