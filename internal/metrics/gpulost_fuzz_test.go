package metrics

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

// FuzzGPUSecondsLostWithinHeld: for any history of one replica's restarts,
// each in place or not, at any times, the GPU time copse_gpu_seconds_lost
// counts over all of them is at most the GPU time the replica's pods held.
// A restart in place keeps its pods, scheduled once, so a count from their
// scheduling at every restart would count the kept time again.
func FuzzGPUSecondsLostWithinHeld(f *testing.F) {
	f.Add(uint8(2), uint16(60), uint16(60), uint16(60), uint8(0b111))
	f.Add(uint8(1), uint16(1), uint16(600), uint16(5), uint8(0b010))
	f.Fuzz(func(t *testing.T, pods uint8, first, second, third uint16, inPlace uint8) {
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		n := int(pods%4) + 1
		var live []podstate.Summary
		for i := range n {
			live = append(live, podstate.Summary{Name: string(rune('a' + i)), GPUs: 4, ScheduledAt: t0})
		}
		held := 0.0
		lost := 0.0
		now := t0
		status := copsev1alpha1.PodCliqueSetStatus{}
		pcs := &copsev1alpha1.PodCliqueSet{}
		for attempt, gap := range []uint16{first, second, third} {
			now = now.Add(time.Duration(gap%3600+1) * time.Second)
			rec := copsev1alpha1.ReplicaRecreation{ReplicaIndex: 0, Attempt: int32(attempt + 1),
				Reason: copsev1alpha1.RecreationReasonTrainingRestart, StartedAt: metav1.NewTime(now), InPlace: inPlace&(1<<attempt) != 0}
			current := *status.DeepCopy()
			current.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{rec}
			got := TransitionsOf(pcs, &status, &current, []copsev1alpha1.ReplicaRecreation{rec}, live, now)
			lost += got.Recreations[0].GPUSecondsLost
			var next []podstate.Summary
			for _, p := range live {
				if rec.InPlace {
					p.Attempt = attempt + 1 // kept: same pod, same scheduling
					next = append(next, p)
					continue
				}
				held += float64(p.GPUs) * now.Sub(p.ScheduledAt).Seconds()
				next = append(next, podstate.Summary{Name: p.Name, GPUs: p.GPUs, Attempt: attempt + 1, ScheduledAt: now})
			}
			live, status = next, current
		}
		for _, p := range live {
			held += float64(p.GPUs) * now.Sub(p.ScheduledAt).Seconds()
		}
		if lost > held+1e-6 {
			t.Fatalf("lost %.0f GPU-seconds of %.0f held", lost, held)
		}
	})
}
