package blueprint

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// Kinds an autoscaler's scaleTargetRef names; both serve the scale
// subresource.
const (
	kindPodClique             = "PodClique"
	kindPodCliqueScalingGroup = "PodCliqueScalingGroup"
)

// defaultCPUUtilization is the metric the API server stores for a
// HorizontalPodAutoscaler created without metrics: 80% average CPU
// utilization (k8s.io/kubernetes pkg/apis/autoscaling/v2/defaults.go).
const defaultCPUUtilization int32 = 80

// Autoscalers is the resource table's row of HorizontalPodAutoscalers: one
// per autoscaling config per replica (ReplicaAutoscalers). An autoscaler
// targets its PodClique or PodCliqueScalingGroup by name, whatever the run,
// so it outlives recreations, as in Grove, where a gang termination deletes
// the replica's PodCliques and leaves its autoscalers alone. It makes no
// pods: it only sets the replica count of objects that do.
func Autoscalers() ReplicaResource {
	return ReplicaResource{
		Kind:      "HorizontalPodAutoscaler",
		NewObject: func() client.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList:   func() client.ObjectList { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Desired: func(in ReplicaInputs) []client.Object {
			return ReplicaAutoscalers(in.PodCliqueSet, in.Replica)
		},
		Refresh:              RefreshAutoscaler,
		RecreatedWithReplica: false,
		MakesPods:            false,
	}
}

// ReplicaAutoscalers are the HorizontalPodAutoscalers of replica r: one for
// each standalone clique with an autoScalingConfig, targeting its
// PodClique, and one for each scaling group with a scaleConfig, targeting
// its PodCliqueScalingGroup. Each is named after its target. A Training
// workload gets none: its replica counts are fixed (the webhook refuses
// autoscaling configs on it; this holds even if one got through).
func ReplicaAutoscalers(pcs *copsev1alpha1.PodCliqueSet, replica int) []client.Object {
	if pcs.IsTraining() {
		return nil
	}
	var out []client.Object
	named := map[string]bool{}
	add := func(hpa *autoscalingv2.HorizontalPodAutoscaler) {
		// A scaling group named like a standalone clique would share its
		// autoscaler's name; the clique's is kept, so that the two never
		// take turns rewriting one object.
		if named[hpa.Name] {
			return
		}
		named[hpa.Name] = true
		out = append(out, hpa)
	}
	for _, clique := range pcs.StandaloneCliques() {
		if config := clique.Spec.ScaleConfig; config != nil {
			add(autoscaler(pcs, replica, kindPodClique, naming.StandalonePodClique(pcs.Name, replica, clique.Name),
				*config, copsev1alpha1.CliqueReplicas(clique.Spec)))
		}
	}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if config := group.ScaleConfig; config != nil {
			add(autoscaler(pcs, replica, kindPodCliqueScalingGroup, naming.ScalingGroup(pcs.Name, replica, group.Name),
				*config, copsev1alpha1.ScalingGroupReplicas(group)))
		}
	}
	return out
}

// autoscaler is the HorizontalPodAutoscaler of one config, named after the
// object it scales, with the config's bounds and metrics.
func autoscaler(pcs *copsev1alpha1.PodCliqueSet, replica int, kind, target string,
	config grovecorev1alpha1.AutoScalingConfig, templateReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
	var metrics []autoscalingv2.MetricSpec
	for i := range config.Metrics {
		metrics = append(metrics, *config.Metrics[i].DeepCopy())
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      target,
			Labels: labels.Merge(labels.ForReplica(pcs.Name, replica), map[string]string{
				labels.ComponentKey: labels.ComponentAutoscaler,
				labels.AppNameKey:   target,
			}),
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: copsev1alpha1.SchemeGroupVersion.String(),
				Kind:       kind,
				Name:       target,
			},
			MinReplicas: ptr.To(copsev1alpha1.AutoScalingMinReplicas(config, templateReplicas)),
			MaxReplicas: config.MaxReplicas,
			Metrics:     metrics,
		},
	}
}

// RefreshAutoscaler brings an existing autoscaler to the target, bounds and
// metrics desired holds, and adds copse's labels it lacks; it leaves
// everything else (other labels, behavior, status) as it is. It reports
// whether anything changed.
func RefreshAutoscaler(existing, desired client.Object) bool {
	current, ok := existing.(*autoscalingv2.HorizontalPodAutoscaler)
	want, wantOK := desired.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || !wantOK {
		return false
	}
	changed := false
	if !hasLabels(current.Labels, want.Labels) {
		current.Labels = labels.Merge(current.Labels, want.Labels)
		changed = true
	}
	if current.Spec.ScaleTargetRef != want.Spec.ScaleTargetRef {
		current.Spec.ScaleTargetRef = want.Spec.ScaleTargetRef
		changed = true
	}
	if !ptr.Equal(current.Spec.MinReplicas, want.Spec.MinReplicas) {
		current.Spec.MinReplicas = ptr.To(ptr.Deref(want.Spec.MinReplicas, 1))
		changed = true
	}
	if current.Spec.MaxReplicas != want.Spec.MaxReplicas {
		current.Spec.MaxReplicas = want.Spec.MaxReplicas
		changed = true
	}
	if !equality.Semantic.DeepEqual(current.Spec.Metrics, storedMetrics(want.Spec.Metrics)) {
		current.Spec.Metrics = want.Spec.Metrics
		changed = true
	}
	return changed
}

// storedMetrics are the metrics the API server stores for metrics: an
// empty list becomes its default CPU metric. Comparing the stored object
// against the unset list instead would rewrite it on every pass.
func storedMetrics(metrics []autoscalingv2.MetricSpec) []autoscalingv2.MetricSpec {
	if len(metrics) > 0 {
		return metrics
	}
	return []autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{
				Type:               autoscalingv2.UtilizationMetricType,
				AverageUtilization: ptr.To(defaultCPUUtilization),
			},
		},
	}}
}

// hasLabels reports whether have carries every entry of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
