package podclique

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

func podClique(replicas int32, minAvailable *int32) *copsev1alpha1.PodClique {
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-0-worker", Namespace: "ml"},
		Spec:       grovecorev1alpha1.PodCliqueSpec{RoleName: "worker", Replicas: replicas, MinAvailable: minAvailable},
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		pclq *copsev1alpha1.PodClique
		want []string
	}{
		{name: "minAvailable equal to replicas", pclq: podClique(3, ptr.To[int32](3))},
		{name: "minAvailable unset", pclq: podClique(3, nil)},
		{name: "no replicas", pclq: podClique(0, ptr.To[int32](1)),
			want: []string{"spec.replicas: Invalid value: 0: must be at least 1"}},
		{name: "minAvailable of 0", pclq: podClique(3, ptr.To[int32](0)),
			want: []string{"spec.minAvailable: Invalid value: 0: must be at least 1"}},
		{name: "minAvailable above replicas", pclq: podClique(3, ptr.To[int32](4)),
			want: []string{"spec.minAvailable: Invalid value: 4: must not be greater than spec.replicas (3)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateCreate(tc.pclq), tc.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *copsev1alpha1.PodClique
		want     []string
	}{
		{name: "scaling up", old: podClique(3, ptr.To[int32](2)), new: podClique(5, ptr.To[int32](2))},
		{name: "scaling below minAvailable", old: podClique(3, ptr.To[int32](2)), new: podClique(1, ptr.To[int32](2)),
			want: []string{"spec.minAvailable: Invalid value: 2: must not be greater than spec.replicas (1)"}},
		{name: "an unchanged spec is accepted even if it breaks a rule", old: podClique(1, ptr.To[int32](2)),
			new: func() *copsev1alpha1.PodClique {
				pclq := podClique(1, ptr.To[int32](2))
				pclq.Finalizers = []string{"example.com/cleanup"}
				return pclq
			}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateUpdate(tc.old, tc.new), tc.want)
		})
	}
}
