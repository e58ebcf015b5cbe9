package podclique

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func TestValidateSize(t *testing.T) {
	limits := configv1alpha1.NewDefaultOperatorConfiguration().Limits
	autoscaled := func(replicas, maxReplicas int32) *copsev1alpha1.PodClique {
		pclq := podClique(replicas, nil)
		pclq.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: maxReplicas}
		return pclq
	}
	tests := []struct {
		name string
		old  *copsev1alpha1.PodClique // nil: a creation
		pclq *copsev1alpha1.PodClique
		want []string
	}{
		{name: "at the limit", pclq: podClique(32768, nil)},
		{name: "over the limit names spec.replicas, the count and the limit", pclq: podClique(1000000, nil),
			want: []string{"spec.replicas: Invalid value: 1000000: this PodClique would have 1000000 pods, more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "an autoscaler that may scale over the limit", pclq: autoscaled(2, 40000),
			want: []string{"spec.autoScalingConfig.maxReplicas: Invalid value: 40000: this PodClique would have 40000 pods, more than the operator's limit limits.maxPodsPerReplica=32768"}},
		{name: "scaling up over the limit", old: podClique(4, nil), pclq: podClique(40000, nil),
			want: []string{"spec.replicas: Invalid value: 40000: this PodClique would have 40000 pods"}},
		{name: "scaling down a PodClique stored over the limit", old: podClique(50000, nil), pclq: podClique(40000, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateSize(tc.old, tc.pclq, limits), tc.want)
		})
	}
}
