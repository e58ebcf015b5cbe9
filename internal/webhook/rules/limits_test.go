package rules

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func TestPodLimitCheck(t *testing.T) {
	limits := configv1alpha1.LimitsConfiguration{MaxPodsPerReplica: 100, MaxPodsPerPodCliqueSet: 300}
	path := field.NewPath("spec", "replicas")
	tests := []struct {
		name          string
		limit         PodLimit
		oldPods, pods int64
		want          []string
	}{
		{name: "a creation within the limit", limit: MaxPodsPerReplica(limits), pods: 100},
		{name: "a creation over the limit names the field, the count and the limit", limit: MaxPodsPerReplica(limits), pods: 101,
			want: []string{"spec.replicas: Invalid value: 7: this thing would have 101 pods, more than the operator's limit limits.maxPodsPerReplica=100"}},
		{name: "the PodCliqueSet limit names its own setting", limit: MaxPodsPerPodCliqueSet(limits), pods: 301,
			want: []string{"spec.replicas: Invalid value: 7: this thing would have 301 pods, more than the operator's limit limits.maxPodsPerPodCliqueSet=300"}},
		{name: "an update that raises the count over the limit", limit: MaxPodsPerReplica(limits), oldPods: 50, pods: 150,
			want: []string{"this thing would have 150 pods"}},
		{name: "an update that raises a count already over the limit", limit: MaxPodsPerReplica(limits), oldPods: 150, pods: 151,
			want: []string{"this thing would have 151 pods"}},
		{name: "an update that keeps a count stored over the limit is allowed", limit: MaxPodsPerReplica(limits), oldPods: 150, pods: 150},
		{name: "an update that shrinks a count stored over the limit is allowed", limit: MaxPodsPerReplica(limits), oldPods: 150, pods: 120},
		{name: "a saturated count says so", limit: MaxPodsPerReplica(limits), pods: math.MaxInt64,
			want: []string{"this thing would have more than 9223372036854775806 pods"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, tc.limit.Check(tc.oldPods, tc.pods, "this thing", path, 7), tc.want)
		})
	}
}
