package podcliqueset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Event reasons (GREP-0285's, plus Grove-style gang termination).
const (
	EventGangTermination     = "GangTermination"
	EventPodCliqueFailed     = "PodCliqueFailed"
	EventReplicaRestarting   = "ReplicaRestarting"
	EventMaxRestartsExceeded = "MaxRestartsExceeded"
	EventMaxRuntimeExceeded  = "MaxRuntimeExceeded"
	EventWorkloadSucceeded   = "WorkloadSucceeded"
)

// recordEvents reports the transitions a status write made durable. It runs
// only after the write succeeded, so a pass that lost a conflict reports
// nothing it did not do.
func (r *Reconciler) recordEvents(pcs *copsev1alpha1.PodCliqueSet, previous, current *copsev1alpha1.PodCliqueSetStatus,
	health []replicaHealth, newRecreations []copsev1alpha1.ReplicaRecreation) {
	training := pcs.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining
	maxRestarts := int32(0)
	if pcs.Spec.TrainingSpec != nil && pcs.Spec.TrainingSpec.MaxRestarts != nil {
		maxRestarts = *pcs.Spec.TrainingSpec.MaxRestarts
	}

	for _, rec := range newRecreations {
		replica := int(rec.ReplicaIndex)
		if !training {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventGangTermination, "Recreate",
				"replica %d stayed below minAvailable for longer than terminationDelay (%s); recreating it: %s",
				replica, terminationDelay(pcs), describeBreach(health, replica))
			continue
		}
		r.recordPodCliqueFailed(pcs, health, replica)
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, EventReplicaRestarting, "Restart",
			"restarting replica %d as attempt %d; restart %d of %d allowed", replica, rec.Attempt, current.RestartCount, maxRestarts)
	}

	was := meta.FindStatusCondition(previous.Conditions, copsev1alpha1.ConditionTypeFailed)
	now := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeFailed)
	if now != nil && now.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue) {
		switch now.Reason {
		case copsev1alpha1.ReasonMaxRestartsExceeded:
			for _, h := range health {
				if h.breached {
					r.recordPodCliqueFailed(pcs, health, h.index)
				}
			}
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventMaxRestartsExceeded, "Fail",
				"%s; terminating all pods", now.Message)
		case copsev1alpha1.ReasonMaxRuntimeExceeded:
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventMaxRuntimeExceeded, "Fail",
				"%s; terminating all pods", now.Message)
		}
	}
	if current.Phase == copsev1alpha1.PodCliqueSetPhaseSucceeded && previous.Phase != copsev1alpha1.PodCliqueSetPhaseSucceeded {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, EventWorkloadSucceeded, "Complete",
			"all %d replicas completed successfully after %d restarts", pcs.Spec.Replicas, current.RestartCount)
	}
}

func (r *Reconciler) recordPodCliqueFailed(pcs *copsev1alpha1.PodCliqueSet, health []replicaHealth, replica int) {
	r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventPodCliqueFailed, "Observe",
		"replica %d: %s", replica, describeBreach(health, replica))
}
