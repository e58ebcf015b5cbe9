package podcliquescalinggroup

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func scalingGroup(replicas int32, minAvailable *int32, cliques ...string) *copsev1alpha1.PodCliqueScalingGroup {
	return &copsev1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-0-decode", Namespace: "ml"},
		Spec:       grovecorev1alpha1.PodCliqueScalingGroupSpec{Replicas: replicas, MinAvailable: minAvailable, CliqueNames: cliques},
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		pcsg *copsev1alpha1.PodCliqueScalingGroup
		want []string
	}{
		{name: "a valid group", pcsg: scalingGroup(3, ptr.To[int32](2), "prefill", "decode")},
		{name: "minAvailable unset", pcsg: scalingGroup(1, nil, "decode")},
		{name: "no replicas", pcsg: scalingGroup(0, ptr.To[int32](1), "decode"),
			want: []string{"spec.replicas: Invalid value: 0: must be at least 1"}},
		{name: "minAvailable of 0", pcsg: scalingGroup(2, ptr.To[int32](0), "decode"),
			want: []string{"spec.minAvailable: Invalid value: 0: must be at least 1"}},
		{name: "minAvailable above replicas", pcsg: scalingGroup(2, ptr.To[int32](3), "decode"),
			want: []string{"spec.minAvailable: Invalid value: 3: must not be greater than spec.replicas (2)"}},
		{name: "no cliques", pcsg: scalingGroup(1, ptr.To[int32](1)),
			want: []string{"spec.cliqueNames: Required value: a scaling group needs at least one clique"}},
		{name: "an invalid or repeated clique name", pcsg: scalingGroup(1, ptr.To[int32](1), "Decode", "prefill", "prefill"),
			want: []string{`spec.cliqueNames[0]: Invalid value: "Decode"`, `spec.cliqueNames[2]: Duplicate value: "prefill"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateCreate(tc.pcsg), tc.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *copsev1alpha1.PodCliqueScalingGroup
		want     []string
	}{
		{name: "scaling up", old: scalingGroup(2, ptr.To[int32](2), "decode"), new: scalingGroup(4, ptr.To[int32](2), "decode")},
		{name: "scaling below minAvailable", old: scalingGroup(2, ptr.To[int32](2), "decode"), new: scalingGroup(1, ptr.To[int32](2), "decode"),
			want: []string{"spec.minAvailable: Invalid value: 2: must not be greater than spec.replicas (1)"}},
		{name: "an unchanged spec is accepted even if it breaks a rule", old: scalingGroup(0, nil, "decode"),
			new: func() *copsev1alpha1.PodCliqueScalingGroup {
				pcsg := scalingGroup(0, nil, "decode")
				pcsg.Labels = map[string]string{"a": "b"}
				return pcsg
			}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateUpdate(tc.old, tc.new), tc.want)
		})
	}
}
