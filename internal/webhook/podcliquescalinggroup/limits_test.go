package podcliquescalinggroup

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// withTemplate gives f's PodCliqueSet a template in which clique "worker",
// the member of f's scaling group, has workers pods.
func withTemplate(f *webhooktest.Family, workers int32) *webhooktest.Family {
	f.Set.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "leader", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: workers}},
	}
	return f
}

func TestValidateSize(t *testing.T) {
	limits := configv1alpha1.NewDefaultOperatorConfiguration().Limits
	tests := []struct {
		name     string
		create   bool
		from     int32 // the old replica count
		replicas int32
		noOwner  bool
		want     []string
	}{
		{name: "creating a group at the limit", create: true, replicas: 8192},
		{name: "creating a group over the limit names its replicas, the count and the limit", create: true, replicas: 10000,
			want: []string{"spec.replicas: Invalid value: 10000: this PodCliqueScalingGroup (4 pods per replica) would have 40000 pods, " +
				"more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "scaling up over the limit", from: 2, replicas: 9000,
			want: []string{"spec.replicas: Invalid value: 9000: this PodCliqueScalingGroup (4 pods per replica) would have 36000 pods"}},
		{name: "scaling down a group stored over the limit", from: 10000, replicas: 9000},
		{name: "without an owner nothing is checked", create: true, replicas: 1000000, noOwner: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := withTemplate(webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference), 4)
			old, pcsg := f.ScalingGroup.DeepCopy(), f.ScalingGroup.DeepCopy()
			old.Spec.Replicas, pcsg.Spec.Replicas = tc.from, tc.replicas
			if tc.create {
				old = nil
			}
			owner := f.Set
			if tc.noOwner {
				owner = nil
			}
			webhooktest.ExpectErrors(t, ValidateSize(old, pcsg, owner, limits), tc.want)
		})
	}
}

func TestSizeRulesConcern(t *testing.T) {
	base := webhooktest.NewFamily("serve", copsev1alpha1.WorkloadTypeInference).ScalingGroup
	changed := func(edit func(*copsev1alpha1.PodCliqueScalingGroup)) *copsev1alpha1.PodCliqueScalingGroup {
		pcsg := base.DeepCopy()
		edit(pcsg)
		return pcsg
	}
	tests := []struct {
		name     string
		old, new *copsev1alpha1.PodCliqueScalingGroup
		want     bool
	}{
		{name: "a creation", new: base, want: true},
		{name: "scaling up", old: base, new: changed(func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.Replicas++ }), want: true},
		{name: "other cliques", old: base, new: changed(func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.CliqueNames = []string{"a", "b"} }), want: true},
		{name: "scaling down", old: base, new: changed(func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.Replicas-- })},
		{name: "another minAvailable", old: base, new: changed(func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.MinAvailable = nil })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sizeRulesConcern(tc.old, tc.new); got != tc.want {
				t.Errorf("sizeRulesConcern = %v, want %v", got, tc.want)
			}
		})
	}
}
