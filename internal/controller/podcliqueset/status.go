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
	failures       stepFailures
	now            time.Time
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

	status.Phase = phase(available)
	if status.Phase == copsev1alpha1.PodCliqueSetPhaseRunning && status.StartTime == nil {
		status.StartTime = ptr.To(metav1.NewTime(in.now))
	}
	return status
}

// phase is Running once any replica is available, Pending before.
func phase(availableReplicas int32) copsev1alpha1.PodCliqueSetPhase {
	if availableReplicas > 0 {
		return copsev1alpha1.PodCliqueSetPhaseRunning
	}
	return copsev1alpha1.PodCliqueSetPhasePending
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
