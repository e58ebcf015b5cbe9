package chaos

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// PodCliqueSetName is the name of every workload's PodCliqueSet; each
// workload has a namespace of its own.
const PodCliqueSetName = "job"

// PodCliqueSet builds the workload's Training PodCliqueSet. The history is
// in the clique templates' annotations, which the simulated runtime reads
// from every pod: how long each run lasts and its exit code per attempt.
func (w Workload) PodCliqueSet(namespace string) *copsev1alpha1.PodCliqueSet {
	var cliques []*grovecorev1alpha1.PodCliqueTemplateSpec
	var grouped []string
	for _, c := range w.Cliques {
		spec := framework.PodSpec(0)
		spec.TerminationGracePeriodSeconds = ptr.To(w.GracePeriodSeconds)
		t := framework.CliqueTemplate(c.Name, c.Pods, spec)
		t.Spec.MinAvailable = ptr.To(c.MinAvailable)
		t.Annotations = map[string]string{cluster.AnnotationExitCode: "0"}
		if c.RunFor > 0 {
			t.Annotations[cluster.AnnotationRunDuration] = c.RunFor.String()
		}
		if codes := c.ExitCodesByAttempt(); codes != "" {
			t.Annotations[cluster.AnnotationExitCodesByAttempt] = codes
		}
		cliques = append(cliques, t)
		if c.Grouped {
			grouped = append(grouped, c.Name)
		}
	}
	pcs := framework.NewPodCliqueSet(namespace, PodCliqueSetName, w.Replicas, cliques...)
	pcs.Labels = map[string]string{"chaos.copse.dev/workload": w.Name, "chaos.copse.dev/scenario": string(w.Scenario)}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To(w.MaxRestarts)}
	if w.MaxRuntime > 0 {
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: w.MaxRuntime}
	}
	if w.Group != nil {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: w.Group.Name, CliqueNames: grouped,
			Replicas: ptr.To(w.Group.Replicas), MinAvailable: ptr.To(w.Group.MinAvailable),
		}}
	}
	return pcs
}

// victimCliqueSelector selects the pods a tolerated-failure workload picks
// its victim from: the victim clique's pods of replica 0 in its first run
// (and of group replica 0 when the clique is grouped).
func (w Workload) victimCliqueSelector() (map[string]string, error) {
	c, err := w.Clique(w.Victim.Clique)
	if err != nil {
		return nil, err
	}
	sel := map[string]string{labels.ReplicaKey: "0", labels.AttemptKey: "0", labels.CliqueTemplateKey: c.Name}
	if c.Grouped {
		sel[labels.ScalingGroupReplicaKey] = "0"
	}
	return sel, nil
}
