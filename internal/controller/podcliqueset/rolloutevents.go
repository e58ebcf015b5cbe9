package podcliqueset

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Events of a rolling update, on the PodCliqueSet.
const (
	EventRollingUpdateStarted   = "RollingUpdateStarted"
	EventReplicaUpdateStarted   = "ReplicaUpdateStarted"
	EventReplicaUpdated         = "ReplicaUpdated"
	EventRollingUpdateCompleted = "RollingUpdateCompleted"
)

// rolloutEvents are the events of a rollout step that the status write
// made durable.
func rolloutEvents(pcs *copsev1alpha1.PodCliqueSet, d rolloutDecision) []transitionEvent {
	var out []transitionEvent
	if d.started {
		strategy := "RollingRecreate: one replica at a time, whole gangs"
		if onDelete(pcs) {
			strategy = "OnDelete: the PodCliques follow the template, and a pod someone deletes comes back with it"
		}
		out = append(out, newEvent(corev1.EventTypeNormal, EventRollingUpdateStarted, "Update",
			fmt.Sprintf("generation hash %s: updating %d replicas (%s)", d.hash, pcs.Spec.Replicas, strategy)))
	}
	if d.replicaUpdated >= 0 {
		out = append(out, newEvent(corev1.EventTypeNormal, EventReplicaUpdated, "Update",
			fmt.Sprintf("replica %d runs generation hash %s and is available", d.replicaUpdated, d.hash)))
	}
	if d.replicaStarted >= 0 {
		out = append(out, newEvent(corev1.EventTypeNormal, EventReplicaUpdateStarted, "Update",
			fmt.Sprintf("updating replica %d to generation hash %s: its base gang first, then each scaling-group gang", d.replicaStarted, d.hash)))
	}
	if d.completed {
		out = append(out, newEvent(corev1.EventTypeNormal, EventRollingUpdateCompleted, "Update",
			fmt.Sprintf("every replica runs generation hash %s", d.hash)))
	}
	return out
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
