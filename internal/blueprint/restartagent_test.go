package blueprint

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/testfixtures"
)

func TestRestartAgent(t *testing.T) {
	const image = "mirror.example/busybox:1"
	build := func(t *testing.T, strategy copsev1alpha1.TrainingRestartStrategy, template []corev1.Container) (*corev1.Pod, error) {
		t.Helper()
		pclq := testfixtures.StandaloneClique(2)
		pclq.Spec.PodSpec.InitContainers = template
		pc := podContextFor(t, pclq)
		pc.PodCliqueSet = testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining)
		pc.PodCliqueSet.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{RestartStrategy: strategy}
		pc.StartupGate = labels.StartupGateOpen
		return BuildPod(pc, []PodDecorator{StartupGate(image), RestartAgent(image)})
	}

	t.Run("InPlace: the agent is the first init container, before the gate, a sidecar whose exit restarts every container", func(t *testing.T) {
		pod, err := build(t, copsev1alpha1.TrainingRestartInPlace, []corev1.Container{{Name: "setup", Image: "setup"}})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != RestartAgentContainer+","+StartupGateContainer+",setup" {
			t.Fatalf("init containers %v", names)
		}
		agent := pod.Spec.InitContainers[0]
		if agent.RestartPolicy == nil || *agent.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("the agent must be a sidecar (restartPolicy Always), got %v", agent.RestartPolicy)
		}
		if len(agent.RestartPolicyRules) != 1 || agent.RestartPolicyRules[0].Action != corev1.ContainerRestartRuleActionRestartAllContainers ||
			agent.RestartPolicyRules[0].ExitCodes == nil || agent.RestartPolicyRules[0].ExitCodes.Values[0] != RestartAgentExitCode {
			t.Errorf("restart rules %+v", agent.RestartPolicyRules)
		}
		if !strings.Contains(agent.Command[2], "/etc/copse/startup-gate/attempt") || !strings.Contains(agent.Command[2], "exit 86") {
			t.Errorf("the agent must watch the attempt file and exit 86: %q", agent.Command)
		}
		var items []string
		for _, v := range pod.Spec.Volumes {
			if v.DownwardAPI != nil {
				for _, item := range v.DownwardAPI.Items {
					items = append(items, item.Path+"="+item.FieldRef.FieldPath)
				}
			}
		}
		if strings.Join(items, " ") != "state=metadata.annotations['copse.dev/startup-gate'] attempt=metadata.labels['copse.dev/attempt']" {
			t.Errorf("downward-API items %v", items)
		}
	})
	t.Run("Recreate: no agent", func(t *testing.T) {
		pod, err := build(t, copsev1alpha1.TrainingRestartRecreate, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pod.Spec.InitContainers {
			if c.Name == RestartAgentContainer {
				t.Fatalf("a Recreate workload's pod has the agent")
			}
		}
	})
	t.Run("a template container of the agent's name is an error that names it", func(t *testing.T) {
		_, err := build(t, copsev1alpha1.TrainingRestartInPlace, []corev1.Container{{Name: RestartAgentContainer}})
		if err == nil || !strings.Contains(err.Error(), RestartAgentContainer) {
			t.Fatalf("err %v", err)
		}
	})
}
