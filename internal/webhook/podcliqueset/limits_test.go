package podcliqueset

import (
	"math"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// defaultLimits are the operator's defaults: 32768 pods per replica, 65536
// in all.
var defaultLimits = configv1alpha1.NewDefaultOperatorConfiguration().Limits

func TestValidateSize(t *testing.T) {
	// valid() has 7 pods per replica: leader 1, worker 4 (in scaling group
	// decode, 1 replica), router 2.
	cliqueReplicas := func(clique int, replicas int32) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[clique].Spec.Replicas = replicas }
	}
	setReplicas := func(replicas int32) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = replicas }
	}
	tests := []struct {
		name   string
		old    *copsev1alpha1.PodCliqueSet // nil: a creation
		pcs    *copsev1alpha1.PodCliqueSet
		limits *configv1alpha1.LimitsConfiguration // nil: defaultLimits
		want   []string
	}{
		{name: "a small PodCliqueSet", pcs: valid()},
		{name: "exactly the per-replica limit", pcs: valid(cliqueReplicas(2, 32768-5))},
		{name: "a clique of a million pods names the clique's replicas, the count and the limit",
			pcs: valid(cliqueReplicas(0, 1000000)),
			want: []string{"spec.template.cliques[0].spec.replicas: Invalid value: 1000000: " +
				"a replica of this PodCliqueSet would have 1000006 pods, more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "an autoscaler's maxReplicas counts",
			pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 40000}
			}),
			want: []string{"spec.template.cliques[2].spec.autoScalingConfig.maxReplicas: Invalid value: 40000: " +
				"a replica of this PodCliqueSet would have 40005 pods, more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "a scaling group's replicas multiply its cliques",
			pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](10000)
			}),
			want: []string{"spec.template.podCliqueScalingGroups[0].replicas: Invalid value: 10000: " +
				"a replica of this PodCliqueSet would have 40003 pods, more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "too many replicas in all name spec.replicas",
			pcs: valid(cliqueReplicas(2, 20000-5), setReplicas(4)),
			want: []string{"spec.replicas: Invalid value: 4: " +
				"this PodCliqueSet (4 replicas of 20000 pods) would have 80000 pods, more than the operator's limit limits.maxPodsPerPodCliqueSet=65536"}},
		{name: "both limits", pcs: valid(cliqueReplicas(2, 40000), setReplicas(2)),
			want: []string{
				"spec.template.cliques[2].spec.replicas: Invalid value: 40000: a replica of this PodCliqueSet would have 40005 pods",
				"spec.replicas: Invalid value: 2: this PodCliqueSet (2 replicas of 40005 pods) would have 80010 pods",
			}},
		{name: "one replica over both limits is reported once", pcs: valid(cliqueReplicas(2, 70000)),
			want: []string{"spec.template.cliques[2].spec.replicas: Invalid value: 70000: a replica of this PodCliqueSet would have 70005 pods"}},
		{name: "zero replicas have no pods in all", pcs: valid(cliqueReplicas(2, 30000), setReplicas(0))},
		{name: "sizes that overflow int64 are refused, not wrapped round",
			pcs: valid(cliqueReplicas(1, math.MaxInt32), setReplicas(math.MaxInt32), func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](math.MaxInt32)
			}),
			want: []string{
				"spec.template.podCliqueScalingGroups[0].replicas: Invalid value: 2147483647: a replica of this PodCliqueSet would have 4611686014132420612 pods",
				"spec.replicas: Invalid value: 2147483647: this PodCliqueSet (2147483647 replicas of 4611686014132420612 pods) would have more than 9223372036854775806 pods",
			}},
		{name: "the operator's configured limits apply", pcs: valid(setReplicas(3)),
			limits: &configv1alpha1.LimitsConfiguration{MaxPodsPerReplica: 6, MaxPodsPerPodCliqueSet: 20},
			want: []string{
				"spec.template.cliques[1].spec.replicas: Invalid value: 4: a replica of this PodCliqueSet would have 7 pods, more than the operator's limit limits.maxPodsPerReplica=6",
				"spec.replicas: Invalid value: 3: this PodCliqueSet (3 replicas of 7 pods) would have 21 pods, more than the operator's limit limits.maxPodsPerPodCliqueSet=20",
			}},

		// Updates: only a change that adds pods is checked.
		{name: "an update that grows a replica over the limit", old: valid(), pcs: valid(cliqueReplicas(2, 40000)),
			want: []string{"spec.template.cliques[2].spec.replicas: Invalid value: 40000: a replica of this PodCliqueSet would have 40005 pods"}},
		{name: "an update of a PodCliqueSet stored over the limit that adds no pods",
			old: valid(cliqueReplicas(2, 40000), setReplicas(3)),
			pcs: valid(cliqueReplicas(2, 40000), setReplicas(3), func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
			})},
		{name: "shrinking a PodCliqueSet stored over the limit, still over it",
			old: valid(cliqueReplicas(2, 40000), setReplicas(3)), pcs: valid(cliqueReplicas(2, 35000), setReplicas(2))},
		{name: "adding replicas to a PodCliqueSet over the total limit",
			old: valid(cliqueReplicas(2, 30000), setReplicas(3)), pcs: valid(cliqueReplicas(2, 30000), setReplicas(4)),
			want: []string{"spec.replicas: Invalid value: 4: this PodCliqueSet (4 replicas of 30005 pods) would have 120020 pods"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limits := defaultLimits
			if tc.limits != nil {
				limits = *tc.limits
			}
			webhooktest.ExpectErrors(t, ValidateSize(tc.old, tc.pcs, limits), tc.want)
		})
	}
}
