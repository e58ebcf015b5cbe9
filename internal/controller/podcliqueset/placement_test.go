package podcliqueset

import (
	"strconv"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		{name: "a problem names the field", pcs: constrained, problems: []topology.Problem{notFound},
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionTrue, Reason: "ClusterTopologyNotFound",
				Message: `spec.template.topologyConstraint.topologyName: Not found: "fleet"; these constraints are left off the gangs and pods created from now on`}},
		{name: "disabled", pcs: constrained, problems: topology.Disabled(constrained),
			want: &metav1.Condition{Type: "TopologyLevelsUnavailable", Status: metav1.ConditionTrue, Reason: "TopologyAwareSchedulingDisabled",
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

func podGroup(name string, replica, attempt int, cond *metav1.Condition) client.Object {
	pg := &schedulingv1beta1.PodGroup{}
	pg.Name = name
	pg.Labels = map[string]string{"grove.io/podcliqueset-replica-index": strconv.Itoa(replica), "copse.dev/attempt": strconv.Itoa(attempt)}
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}
	if cond != nil {
		pg.Status.Conditions = []metav1.Condition{*cond}
	}
	return pg
}

func TestGangsScheduledCondition(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.Replicas = 2
	pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 1}}
	scheduled := &metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled"}
	unschedulable := &metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
		Reason: schedulingv1beta1.PodGroupReasonUnschedulable, Message: "0/16 nodes are available: " + strings.Repeat("x", 400)}
	basic := podGroup("llm-0-prelude", 0, 0, nil)
	basic.(*schedulingv1beta1.PodGroup).Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	cases := []struct {
		name    string
		groups  []client.Object
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "no gang: absent", groups: []client.Object{basic}},
		{name: "all placed", groups: []client.Object{podGroup("llm-0", 0, 0, scheduled), podGroup("llm-1", 1, 1, scheduled), basic},
			status: metav1.ConditionTrue, reason: "AllGangsScheduled", message: "all 2 gangs were placed"},
		{name: "an earlier run's gang does not count", groups: []client.Object{podGroup("llm-0", 0, 0, scheduled), podGroup("llm-1", 1, 0, unschedulable)},
			status: metav1.ConditionTrue, reason: "AllGangsScheduled", message: "all 1 gangs were placed"},
		{name: "waiting for a verdict", groups: []client.Object{podGroup("llm-0", 0, 0, scheduled), podGroup("llm-1", 1, 1, nil)},
			status: metav1.ConditionUnknown, reason: "GangsPending", message: "1 of 2 gangs placed; waiting for the scheduler to place llm-1"},
		{name: "an unplaceable gang is quoted, trimmed", groups: []client.Object{podGroup("llm-0", 0, 0, nil), podGroup("llm-1", 1, 1, unschedulable)},
			status: metav1.ConditionFalse, reason: "Unschedulable",
			message: "the scheduler cannot place 1 of 2 gangs: llm-1 (Unschedulable: 0/16 nodes are available: " + strings.Repeat("x", 300-len("0/16 nodes are available: ")) + "...)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gangsScheduledCondition(pcs, tc.groups, t0)
			if tc.status == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("got %+v\nwant %s/%s %q", got, tc.status, tc.reason, tc.message)
			}
		})
	}
}
