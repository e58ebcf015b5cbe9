package podcliqueset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/podstate"
)

// TestEndedOrphans: of an ended workload's pods, only those that stopped
// and that no PodClique owns (moved by a restart in place, never adopted)
// are deleted; owned, running or already terminating ones are not.
func TestEndedOrphans(t *testing.T) {
	obs := &observed{pods: []podstate.Summary{
		{Name: "moved-ended", Phase: corev1.PodSucceeded},
		{Name: "moved-running", Phase: corev1.PodRunning},
		{Name: "moved-going", Phase: corev1.PodFailed, Terminating: true},
		{Name: "owned-ended", Phase: corev1.PodFailed, ControllerUID: "pclq"},
	}}
	got := endedOrphans(obs)
	if len(got) != 1 || got[0].Name != "moved-ended" {
		t.Errorf("endedOrphans = %+v, want only moved-ended", got)
	}
}
