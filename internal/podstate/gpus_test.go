package podstate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/copse-dev/copse/internal/mnnvl"
)

func TestGPUsOf(t *testing.T) {
	gpus := func(n int64) corev1.ResourceRequirements {
		l := corev1.ResourceList{mnnvl.GPUResource: *resource.NewQuantity(n, resource.DecimalSI)}
		return corev1.ResourceRequirements{Limits: l, Requests: l}
	}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"no GPU", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, 0},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: gpus(4)}, {Name: "b", Resources: gpus(2)}}}, 6},
		{"an init container's request counts when larger", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", Resources: gpus(8)}},
			Containers: []corev1.Container{{Name: "a", Resources: gpus(4)}}}, 8},
		{"a sidecar adds to the containers", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: gpus(1)}},
			Containers: []corev1.Container{{Name: "a", Resources: gpus(4)}}}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GPUsOf(&corev1.Pod{Spec: tt.spec}); got != tt.want {
				t.Errorf("GPUsOf = %d, want %d", got, tt.want)
			}
		})
	}
}
