package lifecycle

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/copse-dev/copse/internal/podstate"
)

var t0 = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

func pod(index int, phase corev1.PodPhase, finished time.Time) podstate.Summary {
	return podstate.Summary{Name: fmt.Sprintf("pod-%d", index), Index: index, HasIndex: true, Phase: phase, FinishedAt: finished}
}

// earlierAttempt is p moved by a restart in place that ended before the
// kubelet restarted it.
func earlierAttempt(p podstate.Summary) podstate.Summary {
	p.Moved, p.RestartsAtMove, p.ContainerRestarts = true, 2, 2
	return p
}

func TestCliqueCompletion(t *testing.T) {
	ok, run, bad := corev1.PodSucceeded, corev1.PodRunning, corev1.PodFailed
	cases := []struct {
		name         string
		replicas     int
		recorded     string
		recordedLast *metav1.Time
		pods         []podstate.Summary
		wantSet      string
		wantComplete bool
		wantLast     time.Time
	}{
		{name: "every index exited 0", replicas: 3, pods: []podstate.Summary{pod(0, ok, t0), pod(1, ok, t0.Add(time.Minute)), pod(2, ok, t0)},
			wantSet: "0-2", wantComplete: true, wantLast: t0.Add(time.Minute)},
		{name: "one index still runs", replicas: 3, pods: []podstate.Summary{pod(0, ok, t0), pod(1, run, time.Time{}), pod(2, ok, t0)},
			wantSet: "0,2", wantLast: t0},
		{name: "one index failed", replicas: 2, pods: []podstate.Summary{pod(0, ok, t0), pod(1, bad, t0)}, wantSet: "0", wantLast: t0},
		{name: "a recorded index needs no pod: exit 0 is final", replicas: 2, recorded: "1", recordedLast: &metav1.Time{Time: t0.Add(time.Hour)},
			pods: []podstate.Summary{pod(0, ok, t0)}, wantSet: "0-1", wantComplete: true, wantLast: t0.Add(time.Hour)},
		{name: "two pods on one index are one index", replicas: 2, pods: []podstate.Summary{pod(0, ok, t0), pod(0, ok, t0)}, wantSet: "0", wantLast: t0},
		{name: "indices beyond replicas do not count", replicas: 2, recorded: "5", pods: []podstate.Summary{pod(0, ok, t0), pod(2, ok, t0)}, wantSet: "0", wantLast: t0},
		{name: "a pod without index does not count", replicas: 1, pods: []podstate.Summary{{Name: "x", Phase: ok}}, wantSet: ""},
		{name: "a malformed record is read as empty", replicas: 1, recorded: "x-1", pods: []podstate.Summary{pod(0, ok, t0)}, wantSet: "0", wantComplete: true, wantLast: t0},
		{name: "a kept pod's old process that exited 0 before its restart in place is no success of this attempt", replicas: 2,
			pods: []podstate.Summary{pod(0, ok, t0), earlierAttempt(pod(1, ok, t0.Add(time.Minute)))}, wantSet: "0", wantLast: t0},
		{name: "no replicas is never complete", replicas: 0, wantSet: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CliqueCompletion(c.replicas, c.recorded, c.recordedLast, c.pods)
			if got.Succeeded.String() != c.wantSet || got.Complete != c.wantComplete || !got.LastSucceeded.Equal(c.wantLast) {
				t.Errorf("got set %q complete %v last %v; want %q %v %v", got.Succeeded, got.Complete, got.LastSucceeded, c.wantSet, c.wantComplete, c.wantLast)
			}
		})
	}
}
