package chaos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/labels"
)

func cliquePod(uid, attempt string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{
			labels.CliqueTemplateKey: "s0", labels.ReplicaKey: "0", labels.AttemptKey: attempt,
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// A pod restarted in place keeps its UID: the step that evicted its
// sibling saw it in attempt 0, but in attempt 1 it is a new run that the
// next steps (an exit, the release) act on. Keyed by UID, the release left
// such pods running for ever (chaos seed 1795838819251628841).
func TestStepsActOnARunRestartedInPlace(t *testing.T) {
	u := unit{Kind: KindPodCliqueSet, Namespace: "ns", Name: "job"}
	evict := Step{Kind: StepEvict, Replica: 0, Clique: "s0"}
	before := unitState{Pods: []corev1.Pod{cliquePod("a", "0"), cliquePod("b", "0"), cliquePod("c", "0")}}
	seen := aimedAt(u, evict, before)
	if len(seen) != 3 {
		t.Fatalf("the eviction aimed at %d runs, want the clique's 3", len(seen))
	}
	if got := targetPods(u, Step{Kind: StepExit, Clique: "s0"}, before, seen); len(got) != 0 {
		t.Fatalf("an exit after the eviction targets %d pods of the run it saw, want none", len(got))
	}

	moved := unitState{Pods: []corev1.Pod{cliquePod("b", "1"), cliquePod("c", "1"), cliquePod("d", "1")}}
	if got := targetPods(u, Step{Kind: StepExit, Clique: "s0"}, moved, seen); len(got) != 3 {
		t.Fatalf("an exit after a restart in place targets %d pods, want all 3 of attempt 1 (2 kept, 1 new)", len(got))
	}
	for i := range moved.Pods {
		if seen[runOf(&moved.Pods[i])] {
			t.Errorf("pod %s in attempt 1 counts as seen by the eviction: the release would skip it", moved.Pods[i].UID)
		}
	}
}
