package podcliqueset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
)

// Events of a rolling update, on the PodCliqueSet.
const (
	EventRollingUpdateStarted   = "RollingUpdateStarted"
	EventReplicaUpdateStarted   = "ReplicaUpdateStarted"
	EventReplicaUpdated         = "ReplicaUpdated"
	EventRollingUpdateCompleted = "RollingUpdateCompleted"
)

// deleteOldPods deletes the old pods of this pass's rollout step, once the
// written status records their replica as the one being updated: a crash
// after the write resumes the same replica, and a replica already updated
// is never touched. Each deletion names the pod's UID, and the write
// budget bounds them; the rest waits for the next pass.
func (r *Reconciler) deleteOldPods(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, d rolloutDecision, budget *children.Budget) error {
	p := pcs.Status.UpdateProgress
	if len(d.deletePods) == 0 || !rollingUpdateInProgress(p) || len(p.CurrentlyUpdating) == 0 ||
		int(p.CurrentlyUpdating[0].ReplicaIndex) != d.deleteReplica {
		return nil
	}
	pods := children.Cut(budget, d.deletePods)
	if len(pods) == 0 {
		return nil
	}
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	log.FromContext(ctx).Info("rolling update: deleting old pods", "replica", d.deleteReplica, "pods", names)
	_, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		return children.DeletePod(ctx, r.Client, pcs.Namespace, pods[i])
	})
	if err != nil {
		return fmt.Errorf("rolling update of replica %d: %w", d.deleteReplica, err)
	}
	return nil
}

// rolloutEvents are the events of a rollout step that the status write
// made durable.
func rolloutEvents(pcs *copsev1alpha1.PodCliqueSet, d rolloutDecision) []transitionEvent {
	var out []transitionEvent
	if d.started {
		strategy := "RollingRecreate: one replica at a time, whole gangs"
		if onDelete(pcs) {
			strategy = "OnDelete: the PodCliques follow the template, and a pod someone deletes comes back with it"
		}
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventRollingUpdateStarted, "Update",
			fmt.Sprintf("generation hash %s: updating %d replicas (%s)", d.hash, pcs.Spec.Replicas, strategy)})
	}
	if d.replicaUpdated >= 0 {
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventReplicaUpdated, "Update",
			fmt.Sprintf("replica %d runs generation hash %s and is available", d.replicaUpdated, d.hash)})
	}
	if d.replicaStarted >= 0 {
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventReplicaUpdateStarted, "Update",
			fmt.Sprintf("updating replica %d to generation hash %s: its base gang first, then each scaling-group gang", d.replicaStarted, d.hash)})
	}
	if d.completed {
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventRollingUpdateCompleted, "Update",
			fmt.Sprintf("every replica runs generation hash %s", d.hash)})
	}
	return out
}

// recordRolloutEvents emits rolloutEvents.
func (r *Reconciler) recordRolloutEvents(pcs *copsev1alpha1.PodCliqueSet, d rolloutDecision) {
	for _, e := range rolloutEvents(pcs, d) {
		r.Recorder.Eventf(pcs, nil, e.eventType, e.reason, e.action, "%s", e.message)
	}
}

// recreatingReplicas are the replicas with a recreation under way or
// decided this pass.
func recreatingReplicas(inProgress map[int]bool, added []copsev1alpha1.ReplicaRecreation) map[int]bool {
	out := map[int]bool{}
	for r := range inProgress {
		out[r] = true
	}
	for _, rec := range added {
		out[int(rec.ReplicaIndex)] = true
	}
	return out
}
