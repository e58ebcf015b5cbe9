package podcliqueset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestRestartsInPlace(t *testing.T) {
	inPlace := &copsev1alpha1.PodCliqueSet{Spec: copsev1alpha1.PodCliqueSetSpec{WorkloadType: copsev1alpha1.WorkloadTypeTraining,
		TrainingSpec: &copsev1alpha1.TrainingSpec{RestartStrategy: copsev1alpha1.TrainingRestartInPlace}}}
	recreate := inPlace.DeepCopy()
	recreate.Spec.TrainingSpec.RestartStrategy = ""
	for reason, want := range map[copsev1alpha1.RecreationReason]bool{
		copsev1alpha1.RecreationReasonTrainingRestart:     true,
		copsev1alpha1.RecreationReasonUncountedRestart:    true,
		copsev1alpha1.RecreationReasonSuspension:          false,
		copsev1alpha1.RecreationReasonGangTermination:     false,
		copsev1alpha1.RecreationReasonIncompletePlacement: false,
	} {
		if got := restartsInPlace(inPlace, reason); got != want {
			t.Errorf("InPlace, %s: %v, want %v", reason, got, want)
		}
		if restartsInPlace(recreate, reason) {
			t.Errorf("Recreate (default), %s: restarts in place", reason)
		}
	}
}

func TestKeptInPlace(t *testing.T) {
	tests := []struct {
		name string
		pod  podstate.Summary
		want bool
	}{
		{"running on its node", podstate.Summary{Phase: corev1.PodRunning, Node: "n1"}, true},
		{"pending, not placed yet", podstate.Summary{Phase: corev1.PodPending}, true},
		{"failed: made anew", podstate.Summary{Phase: corev1.PodFailed, Node: "n1"}, false},
		{"succeeded: made anew (its containers cannot run again)", podstate.Summary{Phase: corev1.PodSucceeded, Node: "n1"}, false},
		{"being deleted", podstate.Summary{Phase: corev1.PodRunning, Node: "n1", Terminating: true}, false},
		{"its node is gone", podstate.Summary{Phase: corev1.PodRunning, Node: "gone"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keptInPlace(tt.pod, map[string]bool{"gone": true, "n1": false}); got != tt.want {
				t.Errorf("keptInPlace %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBarrierLifted(t *testing.T) {
	pod := func(attempt int, phase corev1.PodPhase, gate string, holding bool) podstate.Summary {
		return podstate.Summary{Replica: 0, Attempt: attempt, Phase: phase, StartupGate: gate, GateHolding: holding}
	}
	tests := []struct {
		name string
		pods []podstate.Summary
		want bool
	}{
		{"every pod adopted and held at its gate", []podstate.Summary{pod(1, corev1.PodRunning, "closed", true), pod(1, corev1.PodPending, "closed", true)}, true},
		{"a kept pod not adopted yet runs the old attempt", []podstate.Summary{pod(1, corev1.PodRunning, "closed", true), pod(0, corev1.PodRunning, "open", false)}, false},
		{"an old pod still terminating holds its node", []podstate.Summary{{Replica: 0, Attempt: 0, Phase: corev1.PodRunning, Terminating: true}}, false},
		{"an old pod that ended does not hold", []podstate.Summary{pod(0, corev1.PodFailed, "open", false), pod(1, corev1.PodPending, "closed", true)}, true},
		{"adopted, but its old containers still run (gate completed)", []podstate.Summary{pod(1, corev1.PodRunning, "closed", false)}, false},
		{"a pod of the new attempt already past its open gate", []podstate.Summary{pod(1, corev1.PodRunning, "open", false)}, true},
		{"another replica's pods do not count", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := barrierLifted(tt.pods, 1); got != tt.want {
				t.Errorf("barrierLifted %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("recorded once the recreation completed", func(t *testing.T) {
		done := metav1.NewTime(t0)
		recs := []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1, InPlace: true, CompletedAt: &done}}
		held := []podstate.Summary{pod(1, corev1.PodRunning, "closed", true)}
		p := assessRecreations(recs, nil, held)
		if !p.barrierLifted[0] {
			t.Fatalf("barrier not lifted")
		}
		merged := mergeRecreations(recs, nil, p, t0)
		if merged[0].BarrierLiftedAt == nil || !merged[0].BarrierLiftedAt.Time.Equal(t0) {
			t.Errorf("BarrierLiftedAt %v, want %v", merged[0].BarrierLiftedAt, t0)
		}
	})
}
