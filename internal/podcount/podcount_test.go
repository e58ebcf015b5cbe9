package podcount

import (
	"math"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

const maxInt32 = math.MaxInt32

func clique(name string, replicas int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: replicas}}
}

func autoscaled(name string, replicas, maxReplicas int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	c := clique(name, replicas)
	c.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: maxReplicas}
	return c
}

func group(name string, replicas *int32, members ...string) grovecorev1alpha1.PodCliqueScalingGroupConfig {
	return grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: name, Replicas: replicas, CliqueNames: members}
}

func spec(replicas int32, cliques []*grovecorev1alpha1.PodCliqueTemplateSpec, groups ...grovecorev1alpha1.PodCliqueScalingGroupConfig) *copsev1alpha1.PodCliqueSetSpec {
	s := &copsev1alpha1.PodCliqueSetSpec{}
	s.Replicas = replicas
	s.Template.Cliques = cliques
	s.Template.PodCliqueScalingGroupConfigs = groups
	return s
}

func TestPodCliqueSet(t *testing.T) {
	tests := []struct {
		name           string
		spec           *copsev1alpha1.PodCliqueSetSpec
		wantPerReplica int64
		wantTotal      int64
		// wantField and wantValue name the field that contributes most.
		wantField string
		wantValue int64
	}{
		{name: "no cliques", spec: spec(3, nil)},
		{name: "a null clique is skipped", spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{nil, clique("a", 2)}),
			wantPerReplica: 2, wantTotal: 2, wantField: "spec.template.cliques[1].spec.replicas", wantValue: 2},
		{name: "standalone cliques add up",
			spec:           spec(3, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 8), clique("router", 2)}),
			wantPerReplica: 11, wantTotal: 33, wantField: "spec.template.cliques[1].spec.replicas", wantValue: 8},
		{name: "the brief's example: one huge clique among small ones",
			spec:           spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("worker", 1000000), clique("leader", 1), clique("router", 2)}),
			wantPerReplica: 1000003, wantTotal: 1000003, wantField: "spec.template.cliques[0].spec.replicas", wantValue: 1000000},
		{name: "zero PodCliqueSet replicas have no pods in total",
			spec:           spec(0, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("a", 4)}),
			wantPerReplica: 4, wantTotal: 0, wantField: "spec.template.cliques[0].spec.replicas", wantValue: 4},
		{name: "negative counts count as none",
			spec:           spec(-2, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("a", -5), clique("b", 1)}),
			wantPerReplica: 1, wantTotal: 0, wantField: "spec.template.cliques[1].spec.replicas", wantValue: 1},
		{name: "an autoscaled clique counts at maxReplicas",
			spec:           spec(2, []*grovecorev1alpha1.PodCliqueTemplateSpec{autoscaled("a", 2, 10), clique("b", 3)}),
			wantPerReplica: 13, wantTotal: 26, wantField: "spec.template.cliques[0].spec.autoScalingConfig.maxReplicas", wantValue: 10},
		{name: "a maxReplicas below replicas does not lower the count",
			spec:           spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{autoscaled("a", 6, 2)}),
			wantPerReplica: 6, wantTotal: 6, wantField: "spec.template.cliques[0].spec.replicas", wantValue: 6},
		{name: "a scaling group multiplies the sum of its cliques",
			spec: spec(2, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("prefill", 2), clique("decode", 3)},
				group("pd", ptr.To[int32](4), "prefill", "decode")),
			wantPerReplica: 1 + 4*(2+3), wantTotal: 2 * 21, wantField: "spec.template.podCliqueScalingGroups[0].replicas", wantValue: 4},
		{name: "unset group replicas count as 1",
			spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 5)},
				group("g", nil, "worker")),
			wantPerReplica: 6, wantTotal: 6, wantField: "spec.template.cliques[1].spec.replicas", wantValue: 5},
		{name: "a group's largest member is named when it outnumbers the group's replicas",
			spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("a", 2), clique("b", 50)},
				group("g", ptr.To[int32](3), "a", "b")),
			wantPerReplica: 3 * 52, wantTotal: 156, wantField: "spec.template.cliques[1].spec.replicas", wantValue: 50},
		{name: "an autoscaled group counts at scaleConfig.maxReplicas",
			spec: func() *copsev1alpha1.PodCliqueSetSpec {
				s := spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("w", 2)}, group("g", ptr.To[int32](2), "w"))
				s.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 16}
				return s
			}(),
			wantPerReplica: 32, wantTotal: 32, wantField: "spec.template.podCliqueScalingGroups[0].scaleConfig.maxReplicas", wantValue: 16},
		{name: "the largest of several contributions is named",
			spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("big", 30), clique("w", 2)},
				group("g", ptr.To[int32](20), "w")),
			wantPerReplica: 70, wantTotal: 70, wantField: "spec.template.podCliqueScalingGroups[0].replicas", wantValue: 20},
		{name: "a member that names no clique adds nothing",
			spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("w", 2)},
				group("g", ptr.To[int32](3), "w", "missing")),
			wantPerReplica: 6, wantTotal: 6, wantField: "spec.template.podCliqueScalingGroups[0].replicas", wantValue: 3},
		{name: "a clique in two groups counts in each (an invalid spec is still counted, not skipped)",
			spec: spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("w", 2)},
				group("g", ptr.To[int32](3), "w"), group("h", ptr.To[int32](5), "w")),
			wantPerReplica: 16, wantTotal: 16, wantField: "spec.template.podCliqueScalingGroups[1].replicas", wantValue: 5},

		// Sizes that overflow int64 saturate at math.MaxInt64.
		{name: "int32 maxima everywhere do not overflow",
			spec: spec(maxInt32, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("a", maxInt32), clique("b", maxInt32)},
				group("g", ptr.To[int32](maxInt32), "a", "b")),
			wantPerReplica: 2 * maxInt32 * maxInt32, wantTotal: math.MaxInt64,
			wantField: "spec.template.podCliqueScalingGroups[0].replicas", wantValue: maxInt32},
		{name: "the product of a group saturates",
			spec: func() *copsev1alpha1.PodCliqueSetSpec {
				cliques := []*grovecorev1alpha1.PodCliqueTemplateSpec{}
				var names []string
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					cliques = append(cliques, autoscaled(n, 1, maxInt32))
					names = append(names, n)
				}
				s := spec(1, cliques, group("g", ptr.To[int32](maxInt32), names...), group("h", ptr.To[int32](maxInt32), names...))
				return s
			}(),
			wantPerReplica: math.MaxInt64, wantTotal: math.MaxInt64,
			wantField: "spec.template.podCliqueScalingGroups[0].replicas", wantValue: maxInt32},
		{name: "many standalone cliques at the int32 maximum add up without overflow",
			spec: func() *copsev1alpha1.PodCliqueSetSpec {
				var cliques []*grovecorev1alpha1.PodCliqueTemplateSpec
				for range 4 {
					cliques = append(cliques, clique("c", maxInt32))
				}
				return spec(2, cliques)
			}(),
			wantPerReplica: 4 * maxInt32, wantTotal: 8 * maxInt32,
			wantField: "spec.template.cliques[0].spec.replicas", wantValue: maxInt32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodCliqueSet(tc.spec)
			if got.PerReplica != tc.wantPerReplica || got.Total != tc.wantTotal {
				t.Errorf("PerReplica, Total = %d, %d; want %d, %d", got.PerReplica, got.Total, tc.wantPerReplica, tc.wantTotal)
			}
			gotField := ""
			if got.LargestField != nil {
				gotField = got.LargestField.String()
			}
			if gotField != tc.wantField || got.LargestValue != tc.wantValue {
				t.Errorf("largest contributor = %s (%d), want %s (%d)", gotField, got.LargestValue, tc.wantField, tc.wantValue)
			}
		})
	}
}

func TestScalingGroup(t *testing.T) {
	s := spec(1, []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("prefill", 2), autoscaled("decode", 3, 7), nil, clique("huge", maxInt32)})
	tests := []struct {
		name                string
		members             []string
		replicas            int32
		wantPods, wantPerGR int64
	}{
		{name: "no members", replicas: 3},
		{name: "one member", members: []string{"prefill"}, replicas: 3, wantPods: 6, wantPerGR: 2},
		{name: "an autoscaled member counts at maxReplicas", members: []string{"prefill", "decode"}, replicas: 2, wantPods: 18, wantPerGR: 9},
		{name: "a name that is not in the template adds nothing", members: []string{"prefill", "gone"}, replicas: 1, wantPods: 2, wantPerGR: 2},
		{name: "negative replicas count as none", members: []string{"prefill"}, replicas: -4, wantPods: 0, wantPerGR: 2},
		{name: "int32 maxima multiply in int64", members: []string{"huge"}, replicas: maxInt32, wantPods: maxInt32 * maxInt32, wantPerGR: maxInt32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, perGroupReplica := ScalingGroup(s, tc.members, tc.replicas)
			if pods != tc.wantPods || perGroupReplica != tc.wantPerGR {
				t.Errorf("ScalingGroup(%v, %d) = %d, %d; want %d, %d", tc.members, tc.replicas, pods, perGroupReplica, tc.wantPods, tc.wantPerGR)
			}
		})
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	tests := []struct {
		name string
		got  int64
		want int64
	}{
		{name: "add", got: Add(2, 3), want: 5},
		{name: "add at the edge", got: Add(math.MaxInt64-1, 1), want: math.MaxInt64},
		{name: "add past the edge", got: Add(math.MaxInt64-1, 2), want: math.MaxInt64},
		{name: "add to a saturated value", got: Add(math.MaxInt64, math.MaxInt64), want: math.MaxInt64},
		{name: "multiply", got: Mul(6, 7), want: 42},
		{name: "multiply by zero", got: Mul(0, math.MaxInt64), want: 0},
		{name: "multiply at the edge", got: Mul(math.MaxInt64, 1), want: math.MaxInt64},
		{name: "multiply past the edge", got: Mul(1<<32, 1<<31), want: math.MaxInt64},
		{name: "multiply int32 maxima", got: Mul(maxInt32, maxInt32), want: maxInt32 * maxInt32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
}

func TestClique(t *testing.T) {
	specPath := field.NewPath("spec")
	tests := []struct {
		name      string
		spec      grovecorev1alpha1.PodCliqueSpec
		wantPods  int64
		wantField string
	}{
		{name: "replicas", spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 4}, wantPods: 4, wantField: "spec.replicas"},
		{name: "negative replicas count as none", spec: grovecorev1alpha1.PodCliqueSpec{Replicas: -1}, wantPods: 0, wantField: "spec.replicas"},
		{name: "autoscaled up to maxReplicas", wantPods: 9, wantField: "spec.autoScalingConfig.maxReplicas",
			spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 4, ScaleConfig: &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 9}}},
		{name: "replicas above maxReplicas", wantPods: 4, wantField: "spec.replicas",
			spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 4, ScaleConfig: &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, from := Clique(&tc.spec, specPath)
			if pods != tc.wantPods || from.String() != tc.wantField {
				t.Errorf("Clique = %d from %s, want %d from %s", pods, from, tc.wantPods, tc.wantField)
			}
		})
	}
}

func TestScalingGroupReplicas(t *testing.T) {
	tests := []struct {
		name  string
		group grovecorev1alpha1.PodCliqueScalingGroupConfig
		want  int64
	}{
		{name: "unset is one", want: 1},
		{name: "replicas", group: grovecorev1alpha1.PodCliqueScalingGroupConfig{Replicas: ptr.To[int32](3)}, want: 3},
		{name: "autoscaled up to maxReplicas", want: 5, group: grovecorev1alpha1.PodCliqueScalingGroupConfig{
			Replicas: ptr.To[int32](2), ScaleConfig: &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 5}}},
		{name: "negative replicas count as none", group: grovecorev1alpha1.PodCliqueScalingGroupConfig{Replicas: ptr.To[int32](-2)}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScalingGroupReplicas(&tc.group); got != tc.want {
				t.Errorf("ScalingGroupReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}
