package podcliquescalinggroup

import (
	"fmt"
	"slices"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// reasonNeverAvailable: the group has not had minAvailable available
// replicas yet, so a shortfall is not a breach.
const reasonNeverAvailable = "NeverAvailable"

// groupReplica is one replica of the scaling group, reduced to its cliques'
// conditions.
type groupReplica struct {
	cliques   int
	scheduled int // cliques with PodCliqueScheduled=True
	available int // cliques with MinAvailableBreached=False
}

// computeStatus derives the group's status from its PodCliques. A group
// replica is scheduled when all its cliques are, available when all its
// cliques are at or above minAvailable.
func computeStatus(pcsg *copsev1alpha1.PodCliqueScalingGroup, cliques []copsev1alpha1.PodClique) grovecorev1alpha1.PodCliqueScalingGroupStatus {
	status := *pcsg.Status.DeepCopy()
	perReplica := map[int]*groupReplica{}
	for i := range cliques {
		j, ok := labels.Index(cliques[i].Labels, labels.ScalingGroupReplicaKey)
		if !ok || j >= int(pcsg.Spec.Replicas) {
			continue
		}
		gr := perReplica[j]
		if gr == nil {
			gr = &groupReplica{}
			perReplica[j] = gr
		}
		gr.cliques++
		if meta.IsStatusConditionTrue(cliques[i].Status.Conditions, constants.ConditionTypePodCliqueScheduled) {
			gr.scheduled++
		}
		if meta.IsStatusConditionFalse(cliques[i].Status.Conditions, constants.ConditionTypeMinAvailableBreached) {
			gr.available++
		}
	}
	members := len(pcsg.Spec.CliqueNames)
	var scheduled, available int32
	for _, gr := range perReplica {
		if gr.cliques >= members && gr.scheduled >= members {
			scheduled++
		}
		if gr.cliques >= members && gr.available >= members {
			available++
		}
	}
	status.ObservedGeneration = ptr.To(pcsg.Generation)
	status.Replicas = int32(len(perReplica))
	status.ScheduledReplicas = scheduled
	status.AvailableReplicas = available
	status.Selector = ptr.To(labels.SelectPodCliqueSet(pcsg.Labels[labels.PartOfKey]).String() + "," + labels.ScalingGroupKey + "=" + pcsg.Name)
	status.Conditions = slices.Clone(status.Conditions)
	meta.SetStatusCondition(&status.Conditions, breachCondition(pcsg, available, status.Conditions))
	return status
}

// breachCondition is Unknown until the group first has minAvailable
// available replicas, then False while it has, True when it falls below.
// Whether the group was available before is read from the previous
// condition, so it survives operator restarts.
func breachCondition(pcsg *copsev1alpha1.PodCliqueScalingGroup, available int32, previous []metav1.Condition) metav1.Condition {
	minAvailable := pcsg.MinAvailable()
	cond := metav1.Condition{Type: constants.ConditionTypeMinAvailableBreached, ObservedGeneration: pcsg.Generation}
	prev := meta.FindStatusCondition(previous, constants.ConditionTypeMinAvailableBreached)
	wasAvailable := prev != nil && prev.Status != metav1.ConditionUnknown
	switch {
	case available >= minAvailable:
		cond.Status, cond.Reason = metav1.ConditionFalse, constants.ConditionReasonSufficientAvailablePCSGReplicas
		cond.Message = fmt.Sprintf("%d of %d group replicas available, minAvailable %d", available, pcsg.Spec.Replicas, minAvailable)
	case wasAvailable:
		cond.Status, cond.Reason = metav1.ConditionTrue, constants.ConditionReasonInsufficientAvailablePCSGReplicas
		cond.Message = fmt.Sprintf("only %d of %d group replicas available, below minAvailable %d", available, pcsg.Spec.Replicas, minAvailable)
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, reasonNeverAvailable
		cond.Message = fmt.Sprintf("%d of minAvailable %d group replicas available; not yet available", available, minAvailable)
	}
	return cond
}
