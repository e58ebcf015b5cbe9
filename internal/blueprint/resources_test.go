package blueprint

import (
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestReplicaResourcesDeletedBy(t *testing.T) {
	want := map[string]map[copsev1alpha1.RecreationReason]bool{
		// The Service selects the replica's pods whatever their run.
		"Service": {copsev1alpha1.RecreationReasonGangTermination: false, copsev1alpha1.RecreationReasonTrainingRestart: false, copsev1alpha1.RecreationReasonSuspension: false},
		// The kinds that make pods go with every recreation, a suspension's too.
		"PodCliqueScalingGroup": {copsev1alpha1.RecreationReasonGangTermination: true, copsev1alpha1.RecreationReasonTrainingRestart: true, copsev1alpha1.RecreationReasonSuspension: true},
		"PodClique":             {copsev1alpha1.RecreationReasonGangTermination: true, copsev1alpha1.RecreationReasonTrainingRestart: true, copsev1alpha1.RecreationReasonSuspension: true},
		// Autoscalers target their objects by name, whatever the run (as in Grove).
		"HorizontalPodAutoscaler": {copsev1alpha1.RecreationReasonGangTermination: false, copsev1alpha1.RecreationReasonTrainingRestart: false, copsev1alpha1.RecreationReasonSuspension: false},
		// Claims outlive the replica's runs, as Grove's: the new run's pods
		// use the same claims.
		"ResourceClaim": {copsev1alpha1.RecreationReasonGangTermination: false, copsev1alpha1.RecreationReasonTrainingRestart: false, copsev1alpha1.RecreationReasonSuspension: false},
	}
	rows := ReplicaResources()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, the test knows %d", len(rows), len(want))
	}
	for _, row := range rows {
		for reason, deleted := range want[row.Kind] {
			if got := row.DeletedBy(reason); got != deleted {
				t.Errorf("%s deleted by %s: %v, want %v", row.Kind, reason, got, deleted)
			}
		}
		// A restart in place deletes what makes pods (the pods it keeps
		// are moved out first) and keeps the rest, as a suspension does.
		inPlace := copsev1alpha1.ReplicaRecreation{Reason: copsev1alpha1.RecreationReasonTrainingRestart, InPlace: true}
		if got, want := row.DeletedByRecreation(inPlace), want[row.Kind][copsev1alpha1.RecreationReasonSuspension]; got != want {
			t.Errorf("%s deleted by a restart in place: %v, want %v (as by a suspension)", row.Kind, got, want)
		}
	}
}
