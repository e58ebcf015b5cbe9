package podclique

import (
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestReplacementDecision(t *testing.T) {
	cases := []struct {
		name      string
		workload  copsev1alpha1.WorkloadType
		pod       podstate.Summary
		available bool
		want      replacement
	}{
		{"running pods are kept", inference, p(0), true, keepPod},
		{"pending pods are kept", inference, p(0, unscheduled), false, keepPod},
		{"inference: a failed pod is replaced", inference, p(0, failed), true, replacePod},
		{"inference: a failed pod is replaced even below minAvailable", inference, p(0, failed), false, replacePod},
		{"inference: a succeeded pod is replaced", inference, p(0, succeeded), true, replacePod},
		{"unset workload type means inference", "", p(0, succeeded), true, replacePod},
		{"training: running pods are kept", training, p(0), true, keepPod},
		{"training: a pod that exited 0 is never recreated", training, p(0, succeeded), true, keepPod},
		{"training: a failed pod is replaced while the clique meets minAvailable", training, p(0, failed), true, replacePod},
		{"training: a failed pod is kept once the clique is below minAvailable", training, p(0, failed), false, keepPod},
		{"training: a kept pod that exited 0 before its restart in place is replaced", training, p(0, succeeded, endedBeforeRestart), true, replacePod},
		{"training: a kept pod that failed before its restart in place is replaced below minAvailable too", training, p(0, failed, endedBeforeRestart), false, replacePod},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := replacementDecision(c.workload == training, c.pod, c.available); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// endedBeforeRestart: a restart in place moved the pod, and it ended before
// the kubelet restarted its containers.
func endedBeforeRestart(i *podstate.Summary) {
	i.Moved, i.RestartsAtMove, i.ContainerRestarts = true, 1, 1
}
