package podcliqueset

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
)

func TestTopologyCondition(t *testing.T) {
	plain := &copsev1alpha1.PodCliqueSet{}
	plain.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{Name: "worker"}}
	constrained := plain.DeepCopy()
	constrained.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet",
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	notFound := topology.Problem{Reason: copsev1alpha1.ReasonClusterTopologyNotFound,
		Err: field.NotFound(field.NewPath("spec", "template", "topologyConstraint", "topologyName"), "fleet")}
	cases := []struct {
		name     string
		pcs      *copsev1alpha1.PodCliqueSet
		problems []topology.Problem
		want     *metav1.Condition
	}{
		{name: "no constraint: absent", pcs: plain},
		{name: "all applied", pcs: constrained, want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionFalse,
			Reason: "AllClusterTopologyLevelsAvailable", Message: "every topologyConstraint is applied with ClusterTopologyBinding fleet"}},
		{name: "the binding is not found: Unknown, the message names the field", pcs: constrained, problems: []topology.Problem{notFound},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "ClusterTopologyNotFound",
				Message: `spec.template.topologyConstraint.topologyName: Not found: "fleet"; these constraints are left off the gangs and pods created from now on`}},
		{name: "a level the binding lacks: True", pcs: constrained, problems: []topology.Problem{{Reason: copsev1alpha1.ReasonClusterTopologyLevelsUnavailable,
			Err: field.NotSupported(field.NewPath("spec", "template", "topologyConstraint", "pack", "required"), "rack", []string{"zone", "host"})}},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionTrue, Reason: "ClusterTopologyLevelsUnavailable",
				Message: `spec.template.topologyConstraint.pack.required: Unsupported value: "rack": supported values: "zone", "host"; these constraints are left off the gangs and pods created from now on`}},
		{name: "no topologyName: Unknown", pcs: constrained, problems: []topology.Problem{{Reason: copsev1alpha1.ReasonTopologyNameMissing,
			Err: field.Required(field.NewPath("spec", "template", "topologyConstraint", "topologyName"), "pack needs it")}},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "TopologyNameMissing",
				Message: `spec.template.topologyConstraint.topologyName: Required value: pack needs it; these constraints are left off the gangs and pods created from now on`}},
		{name: "disabled", pcs: constrained, problems: topology.Disabled(constrained),
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionUnknown, Reason: "TopologyAwareSchedulingDisabled",
				Message: "spec.template.topologyConstraint: Forbidden: " + topology.DisabledMessage + "; these constraints are left off the gangs and pods created from now on"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := topologyCondition(tc.pcs, tc.problems, t0)
			if got != nil {
				got.LastTransitionTime = metav1.Time{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
