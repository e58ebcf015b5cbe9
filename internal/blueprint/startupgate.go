package blueprint

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/internal/labels"
)

// Names of what the startup gate adds to a pod.
const (
	StartupGateContainer = labels.StartupGateContainer
	startupGateVolume    = "copse-startup-gate"
	startupGateDir       = "/etc/copse/startup-gate"
	startupGateFile      = "state"
)

// startupGateScript waits until the downward-API file says the gate is
// open. The kubelet rewrites the file when the pod's annotation changes, so
// the gate needs no API access, ServiceAccount token or RBAC.
var startupGateScript = fmt.Sprintf("until grep -qx %s %s/%s 2>/dev/null; do sleep 1; done",
	labels.StartupGateOpen, startupGateDir, startupGateFile)

// StartupGate is the decorator of cliqueStartupType: a pod of a clique that
// starts after other cliques gets, as its first init container, a gate that
// holds every other container back until the PodClique controller sets the
// pod's labels.StartupGateAnnotation to "open". The pod is created, and its
// gang scheduled, as usual; only its containers wait. image is the gate
// container's image (the operator configuration's startupGate.image).
func StartupGate(image string) PodDecorator {
	return PodDecorator{Name: "startup-gate", Decorate: func(pod *corev1.Pod, pc PodContext) error {
		if pc.StartupGate == "" {
			return nil
		}
		if slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == StartupGateContainer }) ||
			slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == StartupGateContainer }) {
			return fmt.Errorf("the pod template has a container named %s, which copse's startup gate needs", StartupGateContainer)
		}
		if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == startupGateVolume }) {
			return fmt.Errorf("the pod template has a volume named %s, which copse's startup gate needs", startupGateVolume)
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[labels.StartupGateAnnotation] = pc.StartupGate
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name: startupGateVolume,
			VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path:     startupGateFile,
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", labels.StartupGateAnnotation)},
				}},
			}},
		})
		pod.Spec.InitContainers = append([]corev1.Container{startupGateContainer(image)}, pod.Spec.InitContainers...)
		return nil
	}}
}

func startupGateContainer(image string) corev1.Container {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	return corev1.Container{
		Name:         StartupGateContainer,
		Image:        image,
		Command:      []string{"sh", "-c", startupGateScript},
		VolumeMounts: []corev1.VolumeMount{{Name: startupGateVolume, MountPath: startupGateDir, ReadOnly: true}},
		// Requests and limits, so a namespace whose quota demands them
		// still admits the pod; restricted-profile security, so a namespace
		// under Pod Security "restricted" does too.
		Resources: corev1.ResourceRequirements{Requests: small, Limits: small},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(int64(65534)),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}
