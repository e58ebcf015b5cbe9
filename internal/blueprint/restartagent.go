package blueprint

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/internal/labels"
)

// Names of what a restart in place adds to a pod.
const (
	RestartAgentContainer = labels.RestartAgentContainer
	restartAgentFile      = "attempt"
	// RestartAgentExitCode is the code the agent exits with when the pod
	// moves to a new attempt; the agent's restart rule turns it into the
	// kubelet's RestartAllContainers.
	RestartAgentExitCode int32 = 86
)

// restartAgentScript remembers the pod's attempt (its copse.dev/attempt
// label, through the startup gate's downward-API volume) and exits with
// RestartAgentExitCode once the label says another: the PodClique of the
// new attempt adopted the pod. Like the gate, it needs no API access. It
// ends with 0 on SIGTERM (the kubelet stops sidecars so at the pod's end):
// as PID 1 of its container, sh would otherwise ignore the signal and be
// killed with 137 once the grace period ran out, holding the pod that long.
var restartAgentScript = fmt.Sprintf(`trap 'exit 0' TERM; started=$(cat %[1]s/%[2]s); while [ "$(cat %[1]s/%[2]s)" = "$started" ]; do sleep 1; done; exit %[3]d`,
	startupGateDir, restartAgentFile, RestartAgentExitCode)

// RestartAgent is the decorator of trainingSpec.restartStrategy InPlace:
// every pod gets, as its first init container, a sidecar whose exit makes
// the kubelet restart every container of the pod where it is
// (RestartAllContainers), init containers and the startup gate included.
// The gate then holds the new attempt's containers until the PodClique
// controller opens it (the barrier). The pod needs the gate: StartupGate
// must decorate it first. image is the startup gate's image.
func RestartAgent(image string) PodDecorator {
	return PodDecorator{Name: "restart-agent", Decorate: func(pod *corev1.Pod, pc PodContext) error {
		if !pc.PodCliqueSet.RestartsInPlace() {
			return nil
		}
		if slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == RestartAgentContainer }) ||
			slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == RestartAgentContainer }) {
			return fmt.Errorf("the pod template has a container named %s, which copse's restart in place needs", RestartAgentContainer)
		}
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == startupGateVolume })
		if i < 0 || pod.Spec.Volumes[i].DownwardAPI == nil {
			return fmt.Errorf("a pod restarted in place needs copse's startup gate, and has none")
		}
		pod.Spec.Volumes[i].DownwardAPI.Items = append(pod.Spec.Volumes[i].DownwardAPI.Items, corev1.DownwardAPIVolumeFile{
			Path:     restartAgentFile,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", labels.AttemptKey)},
		})
		agent := startupGateContainer(image)
		agent.Name = RestartAgentContainer
		agent.Command = []string{"sh", "-c", restartAgentScript}
		agent.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		agent.RestartPolicyRules = []corev1.ContainerRestartRule{{
			Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: corev1.ContainerRestartRuleOnExitCodesOpIn,
				Values:   []int32{RestartAgentExitCode},
			},
		}}
		pod.Spec.InitContainers = append([]corev1.Container{agent}, pod.Spec.InitContainers...)
		return nil
	}}
}
