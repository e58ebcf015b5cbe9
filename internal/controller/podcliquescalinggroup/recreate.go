package podcliquescalinggroup

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
)

// recreateGroupReplicas deletes the objects of the group replicas to
// recreate that are made afresh for a new run (the rows
// RecreatedWithReplica: their PodCliques, not their claims); converge
// creates them again on a later pass. The decision rests on the cliques'
// breach conditions, which the API server holds, and each deletion names
// the object's UID, so a crash in between repeats nothing: the recreated
// cliques start with no breach.
func (r *Reconciler) recreateGroupReplicas(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup, obs *observed,
	replicas []int, budget *children.Budget) error {
	var errs []error
	for _, j := range replicas {
		var names []string
		for _, row := range blueprint.GroupResources() {
			if !row.RecreatedWithReplica {
				continue
			}
			deleted, err := r.children().Delete(ctx, row.Kind, obs.children.Of(row.Kind, j), budget)
			errs = append(errs, err)
			for _, obj := range deleted {
				names = append(names, obj.GetName())
			}
		}
		if len(names) > 0 && r.Recorder != nil {
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, EventGroupReplicaRecreated, "Recreate",
				"group replica %d stayed below minAvailable for longer than terminationDelay while the group still meets its minAvailable %d; recreating its PodCliques %v",
				j, pcsg.MinAvailable(), names)
		}
	}
	return errors.Join(errs...)
}
