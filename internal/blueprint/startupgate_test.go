package blueprint

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/testfixtures"
)

func TestStartupGate(t *testing.T) {
	const image = "mirror.example/busybox:1"
	tests := []struct {
		name     string
		state    string
		wantGate bool
	}{
		{name: "clique without predecessors: no gate", state: ""},
		{name: "predecessors not Ready: created closed", state: labels.StartupGateClosed, wantGate: true},
		{name: "predecessors Ready: created open", state: labels.StartupGateOpen, wantGate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pclq := testfixtures.StandaloneClique(2)
			pclq.Spec.PodSpec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup"}}
			gate := StartupGate(image)
			gate.Decorate = withState(gate.Decorate, tt.state)
			pod := buildTestPod(t, pclq, 0, gate)

			got, has := pod.Annotations[labels.StartupGateAnnotation]
			if !tt.wantGate {
				if has || len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Volumes) != len(pclq.Spec.PodSpec.Volumes) {
					t.Fatalf("a pod without predecessors must be left alone: annotations %v, init containers %d", pod.Annotations, len(pod.Spec.InitContainers))
				}
				return
			}
			if got != tt.state {
				t.Errorf("annotation %s = %q, want %q", labels.StartupGateAnnotation, got, tt.state)
			}
			if len(pod.Spec.InitContainers) != 2 || pod.Spec.InitContainers[0].Name != StartupGateContainer || pod.Spec.InitContainers[1].Name != "setup" {
				t.Fatalf("the gate must be the first init container, before the template's: %v", pod.Spec.InitContainers)
			}
			c := pod.Spec.InitContainers[0]
			if c.Image != image || !strings.Contains(strings.Join(c.Command, " "), "grep -qx open /etc/copse/startup-gate/state") {
				t.Errorf("gate container: image %q command %q", c.Image, c.Command)
			}
			var volume *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == c.VolumeMounts[0].Name {
					volume = &pod.Spec.Volumes[i]
				}
			}
			if volume == nil || volume.DownwardAPI == nil ||
				volume.DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.annotations['copse.dev/startup-gate']" ||
				volume.DownwardAPI.Items[0].Path != "state" || c.VolumeMounts[0].MountPath != "/etc/copse/startup-gate" {
				t.Errorf("the gate must read its own annotation through a downward-API volume: %+v, mounts %+v", volume, c.VolumeMounts)
			}
			if pod.Spec.ServiceAccountName != pclq.Spec.PodSpec.ServiceAccountName {
				t.Errorf("the gate needs no ServiceAccount")
			}
		})
	}
}

func TestStartupGateRefusesNameClash(t *testing.T) {
	pclq := testfixtures.StandaloneClique(1)
	pclq.Spec.PodSpec.InitContainers = []corev1.Container{{Name: StartupGateContainer}}
	pc := podContextFor(t, pclq)
	pc.StartupGate = labels.StartupGateClosed
	if _, err := BuildPod(pc, []PodDecorator{StartupGate("busybox")}); err == nil || !strings.Contains(err.Error(), StartupGateContainer) {
		t.Errorf("a template container named like the gate must be refused, got %v", err)
	}
}

// withState runs decorate as if the controller had decided state.
func withState(decorate func(*corev1.Pod, PodContext) error, state string) func(*corev1.Pod, PodContext) error {
	return func(pod *corev1.Pod, pc PodContext) error {
		pc.StartupGate = state
		return decorate(pod, pc)
	}
}
