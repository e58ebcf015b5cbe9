package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// Reasons of the PodCliqueSet's MinAvailableBreached condition.
const (
	reasonReplicasBreached = "ReplicasBelowMinAvailable"
	reasonAllAvailable     = "AllReplicasAvailable"
	reasonNotYetAvailable  = "ReplicasNotYetAvailable"
)

// statusInputs is everything status is computed from in one pass.
type statusInputs struct {
	observed       *children
	health         []replicaHealth
	newRecreations []copsev1alpha1.ReplicaRecreation
	finished       map[int]bool
	// restartCount is status.restartCount after this pass's decisions.
	restartCount int32
	// failReason is set when this pass decided that the workload fails.
	failReason  string
	failMessage string
	failures    stepFailures
	now         time.Time
}

// computeStatus derives the PodCliqueSet's whole status from one pass's
// observations and decisions. It is the only place status is computed.
func computeStatus(pcs *copsev1alpha1.PodCliqueSet, in statusInputs) copsev1alpha1.PodCliqueSetStatus {
	status := *pcs.Status.DeepCopy()
	status.ObservedGeneration = ptr.To(pcs.Generation)
	status.Selector = ptr.To(labels.SelectPodCliqueSet(pcs.Name).String())
	status.LastErrors = in.failures.lastErrors(pcs.Status.LastErrors, in.now)
	status.ReplicaRecreations = mergeRecreations(pcs.Status.ReplicaRecreations, in.newRecreations, in.finished, in.now)

	created := map[int]bool{}
	for i := range in.observed.podCliques {
		created[replicaOf(&in.observed.podCliques[i])] = true
	}
	for i := range in.observed.scalingGroups {
		created[replicaOf(&in.observed.scalingGroups[i])] = true
	}
	status.Replicas = 0
	for r := range int(pcs.Spec.Replicas) {
		if created[r] {
			status.Replicas++
		}
	}

	var available, breached int32
	var breachedReplicas []int
	for _, h := range in.health {
		if h.available {
			available++
		}
		if h.breached {
			breached++
			breachedReplicas = append(breachedReplicas, h.index)
		}
	}
	status.AvailableReplicas = available
	status.Conditions = slices.Clone(status.Conditions)
	meta.SetStatusCondition(&status.Conditions, breachCondition(pcs, available, breachedReplicas))

	status.RestartCount = in.restartCount
	if in.failReason != "" {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue, Reason: in.failReason,
			Message: in.failMessage, ObservedGeneration: pcs.Generation,
		})
	}

	allSucceeded, anyRunning := len(in.health) > 0, false
	for _, h := range in.health {
		allSucceeded = allSucceeded && h.succeeded
		anyRunning = anyRunning || h.available || h.succeeded
	}
	status.Phase = computePhase(phaseInputs{
		workloadType: pcs.Spec.WorkloadType,
		previous:     pcs.Status.Phase,
		failing:      meta.IsStatusConditionTrue(status.Conditions, copsev1alpha1.ConditionTypeFailed),
		activePods:   len(in.observed.activePods()),
		allSucceeded: allSucceeded,
		anyRunning:   anyRunning,
	})
	if status.StartTime == nil && (status.Phase == copsev1alpha1.PodCliqueSetPhaseRunning || status.Phase == copsev1alpha1.PodCliqueSetPhaseSucceeded) {
		// Set once, when the workload first runs; restarts never reset it.
		status.StartTime = ptr.To(metav1.NewTime(in.now))
	}
	return status
}

func breachCondition(pcs *copsev1alpha1.PodCliqueSet, available int32, breachedReplicas []int) metav1.Condition {
	cond := metav1.Condition{Type: constants.ConditionTypeMinAvailableBreached, ObservedGeneration: pcs.Generation}
	switch {
	case len(breachedReplicas) > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, reasonReplicasBreached
		cond.Message = fmt.Sprintf("replicas %v are below minAvailable; each is recreated once breached for longer than terminationDelay (%s)",
			breachedReplicas, terminationDelay(pcs))
	case available == pcs.Spec.Replicas:
		cond.Status, cond.Reason = metav1.ConditionFalse, reasonAllAvailable
		cond.Message = fmt.Sprintf("all %d replicas are available", available)
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, reasonNotYetAvailable
		cond.Message = fmt.Sprintf("%d of %d replicas are available; the others have not been available yet", available, pcs.Spec.Replicas)
	}
	return cond
}

// writeStatus writes status if it changed. The patch carries the
// resourceVersion the pass started from, so a decision made on a stale view
// fails with a conflict instead of overwriting newer state.
func (r *Reconciler) writeStatus(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, status copsev1alpha1.PodCliqueSetStatus) error {
	if apiequality.Semantic.DeepEqual(pcs.Status, status) {
		return nil
	}
	patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pcs.Status = status
	if err := r.Client.Status().Patch(ctx, pcs, patch); err != nil {
		return fmt.Errorf("write status of %s/%s: %w", pcs.Namespace, pcs.Name, err)
	}
	return nil
}
