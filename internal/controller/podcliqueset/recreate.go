package podcliqueset

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

// recreationAsk is what one decision of the pass asks for: replicas to
// recreate, for reason.
type recreationAsk struct {
	replicas []int
	reason   copsev1alpha1.RecreationReason
}

// decideRecreations is the one place a recreation is decided: for every
// replica an ask names, its new attempt, its reason, whether it restarts
// in place (restartsInPlace), and the objects of its current run that go
// with it (the UIDs of every object of a row the reason deletes,
// ReplicaResource.DeletedBy). Nothing is deleted here: the recreation is
// written to status first, and its writes (planWrites) follow from the
// status as written; the old run's pods are found by their attempt label.
func decideRecreations(pcs *copsev1alpha1.PodCliqueSet, obs *observed, rows []blueprint.ReplicaResource, now time.Time,
	asks ...recreationAsk) []copsev1alpha1.ReplicaRecreation {
	var out []copsev1alpha1.ReplicaRecreation
	for _, ask := range asks {
		for _, replica := range ask.replicas {
			rec := copsev1alpha1.ReplicaRecreation{
				ReplicaIndex: int32(replica),
				Reason:       ask.reason,
				Attempt:      obs.records.Attempt(replica) + 1,
				StartedAt:    metav1.NewTime(now),
				InPlace:      restartsInPlace(pcs, ask.reason),
			}
			for _, row := range rows {
				if !row.DeletedByRecreation(rec) {
					continue
				}
				for _, obj := range obs.children.Of(row.Kind, replica) {
					rec.Deleting = append(rec.Deleting, obj.GetUID())
				}
			}
			out = append(out, rec)
		}
	}
	return out
}
