package blueprint

import (
	"strconv"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// autoscaled is testPCS with an autoscaled standalone clique (leader, 3
// replicas) and an autoscaled scaling group (serve, 3 replicas).
func autoscaled(leader, serve *grovecorev1alpha1.AutoScalingConfig) *copsev1alpha1.PodCliqueSet {
	pcs := testPCS()
	pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = leader
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = serve
	return pcs
}

type wantAutoscaler struct {
	name, kind string
	min, max   int32
}

func TestReplicaAutoscalers(t *testing.T) {
	queueDepth := []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
	}}}
	tests := []struct {
		name    string
		pcs     *copsev1alpha1.PodCliqueSet
		replica int
		want    []wantAutoscaler
	}{
		{name: "no autoscaling config, no autoscaler", pcs: autoscaled(nil, nil)},
		{name: "a standalone clique's targets its PodClique",
			pcs:     autoscaled(&grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 5}, nil),
			replica: 1,
			want:    []wantAutoscaler{{name: "llm-1-leader", kind: "PodClique", min: 2, max: 5}}},
		{name: "a scaling group's targets its PodCliqueScalingGroup",
			pcs:  autoscaled(nil, &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 6}),
			want: []wantAutoscaler{{name: "llm-0-serve", kind: "PodCliqueScalingGroup", min: 2, max: 6}}},
		{name: "both; minReplicas defaults to the template replicas",
			pcs: autoscaled(&grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4, Metrics: queueDepth},
				&grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 8}),
			want: []wantAutoscaler{{name: "llm-0-leader", kind: "PodClique", min: 3, max: 4}, {name: "llm-0-serve", kind: "PodCliqueScalingGroup", min: 3, max: 8}}},
		{name: "a clique of a scaling group gets none of its own (the webhook refuses it)",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				pcs := autoscaled(nil, nil)
				pcs.Spec.Template.Cliques[1].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
				return pcs
			}()},
		{name: "a Training workload gets none, even if a config got through",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				pcs := autoscaled(&grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}, &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 8})
				pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
				return pcs
			}()},
		{name: "a scaling group named like a standalone clique keeps out of the clique's autoscaler",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				pcs := autoscaled(&grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}, &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 8})
				pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Name = "leader"
				return pcs
			}(),
			want: []wantAutoscaler{{name: "llm-0-leader", kind: "PodClique", min: 3, max: 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := ReplicaAutoscalers(tc.pcs, tc.replica)
			if len(objs) != len(tc.want) {
				t.Fatalf("%d autoscalers, want %d", len(objs), len(tc.want))
			}
			for i, obj := range objs {
				hpa := obj.(*autoscalingv2.HorizontalPodAutoscaler)
				want := tc.want[i]
				ref := hpa.Spec.ScaleTargetRef
				if hpa.Name != want.name || hpa.Namespace != "ml" || ref.Name != want.name || ref.Kind != want.kind || ref.APIVersion != "grove.io/v1alpha1" {
					t.Errorf("autoscaler %s/%s targets %+v, want %s %s", hpa.Namespace, hpa.Name, ref, want.kind, want.name)
				}
				if ptr.Deref(hpa.Spec.MinReplicas, -1) != want.min || hpa.Spec.MaxReplicas != want.max {
					t.Errorf("%s bounds %v..%d, want %d..%d", hpa.Name, hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas, want.min, want.max)
				}
				wantLabels := map[string]string{
					labels.ManagedByKey: labels.ManagedByValue, labels.PartOfKey: "llm", labels.ReplicaKey: strconv.Itoa(tc.replica),
					labels.ComponentKey: "pcs-hpa", labels.AppNameKey: want.name,
				}
				for k, v := range wantLabels {
					if hpa.Labels[k] != v {
						t.Errorf("%s label %s = %q, want %q", hpa.Name, k, hpa.Labels[k], v)
					}
				}
			}
		})
	}
}

func TestReplicaAutoscalersCopiesMetrics(t *testing.T) {
	config := &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}},
	}}}
	pcs := autoscaled(config, nil)
	hpa := ReplicaAutoscalers(pcs, 0)[0].(*autoscalingv2.HorizontalPodAutoscaler)
	if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceMemory {
		t.Fatalf("metrics %+v", hpa.Spec.Metrics)
	}
	*hpa.Spec.Metrics[0].Resource.Target.AverageUtilization = 1
	if *config.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("the template's metrics were shared with the autoscaler")
	}
}

func TestRefreshAutoscaler(t *testing.T) {
	desiredOf := func(config grovecorev1alpha1.AutoScalingConfig) *autoscalingv2.HorizontalPodAutoscaler {
		return ReplicaAutoscalers(autoscaled(&config, nil), 0)[0].(*autoscalingv2.HorizontalPodAutoscaler)
	}
	// serverDefaults does what the API server does to a written autoscaler
	// without metrics (pkg/apis/autoscaling/v2/defaults.go).
	serverDefaults := func(hpa *autoscalingv2.HorizontalPodAutoscaler) {
		if len(hpa.Spec.Metrics) == 0 {
			hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}
		}
	}
	// stored is what the API server keeps of a created autoscaler: its
	// empty metrics defaulted, a label someone else added.
	stored := func(config grovecorev1alpha1.AutoScalingConfig) *autoscalingv2.HorizontalPodAutoscaler {
		hpa := desiredOf(config)
		serverDefaults(hpa)
		hpa.Labels["team"] = "nlp"
		return hpa
	}
	memory := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}}
	base := grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](3), MaxReplicas: 5}
	tests := []struct {
		name     string
		existing *autoscalingv2.HorizontalPodAutoscaler
		desired  grovecorev1alpha1.AutoScalingConfig
		changed  bool
	}{
		{name: "as created, with the server's default metric: nothing to write", existing: stored(base), desired: base},
		{name: "new maxReplicas", existing: stored(base), desired: grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](3), MaxReplicas: 7}, changed: true},
		{name: "new minReplicas", existing: stored(base), desired: grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](4), MaxReplicas: 5}, changed: true},
		{name: "metrics set", existing: stored(base), desired: grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](3), MaxReplicas: 5, Metrics: memory}, changed: true},
		{name: "metrics removed", existing: stored(grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](3), MaxReplicas: 5, Metrics: memory}), desired: base, changed: true},
		{name: "target changed", existing: func() *autoscalingv2.HorizontalPodAutoscaler {
			hpa := stored(base)
			hpa.Spec.ScaleTargetRef.Kind = "Deployment"
			return hpa
		}(), desired: base, changed: true},
		{name: "copse's label removed", existing: func() *autoscalingv2.HorizontalPodAutoscaler {
			hpa := stored(base)
			delete(hpa.Labels, labels.ComponentKey)
			return hpa
		}(), desired: base, changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := desiredOf(tc.desired)
			existing := tc.existing.DeepCopy()
			if got := RefreshAutoscaler(existing, desired); got != tc.changed {
				t.Fatalf("changed = %v, want %v", got, tc.changed)
			}
			if !tc.changed {
				return
			}
			// Once written and defaulted again, it matches: no second write.
			serverDefaults(existing)
			if RefreshAutoscaler(existing.DeepCopy(), desired) {
				t.Errorf("a refreshed autoscaler still differs: %+v", existing.Spec)
			}
			if existing.Labels["team"] != "nlp" {
				t.Errorf("someone else's label was dropped")
			}
			if ptr.Deref(existing.Spec.MinReplicas, -1) != ptr.Deref(desired.Spec.MinReplicas, -2) || existing.Spec.MaxReplicas != desired.Spec.MaxReplicas ||
				existing.Spec.ScaleTargetRef != desired.Spec.ScaleTargetRef {
				t.Errorf("refreshed spec %+v, want %+v", existing.Spec, desired.Spec)
			}
		})
	}
}
