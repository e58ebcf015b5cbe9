package podcliqueset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/topology"
)

// maxSchedulerMessage bounds how much of the scheduler's message about one
// gang the condition quotes.
const maxSchedulerMessage = 300

// maxGangsNamed bounds how many gangs a condition message names.
const maxGangsNamed = 5

// topologyCondition is TopologyLevelsUnavailable: True with the first
// problem's reason and every problem in the message, False when every
// constraint is applied; nil (absent) for a PodCliqueSet without any
// constraint.
func topologyCondition(pcs *copsev1alpha1.PodCliqueSet, problems []topology.Problem, now time.Time) *metav1.Condition {
	if !topology.Constrained(pcs) {
		return nil
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeTopologyLevelsUnavailable, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(problems) == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable
		cond.Message = fmt.Sprintf("every topologyConstraint is applied with ClusterTopologyBinding %s", topology.TopologyName(pcs))
		return &cond
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, problems[0].Reason
	cond.Message = topology.Summary(problems) + "; these constraints are left off the gangs and pods created from now on"
	return &cond
}

// gangsScheduledCondition is PodGangsScheduled, from the gang PodGroups of
// the replicas' current runs and their PodGroupInitiallyScheduled
// condition: False (Unschedulable) naming each gang the scheduler could not
// place, with its message; True once every one was placed; Unknown while
// some have no verdict yet. Nil when there is no such PodGroup (basic
// PodGroups, a prelude, are placed pod by pod and have no verdict).
func gangsScheduledCondition(pcs *copsev1alpha1.PodCliqueSet, podGroups []client.Object, now time.Time) *metav1.Condition {
	var placed int
	var unplaced, pending []string
	current := 0
	for _, obj := range podGroups {
		pg, ok := obj.(*schedulingv1beta1.PodGroup)
		if !ok || pg.Spec.SchedulingPolicy.Gang == nil || !pg.DeletionTimestamp.IsZero() {
			continue
		}
		replica := replicaOf(pg)
		if replica < 0 || replica >= int(pcs.Spec.Replicas) || attemptOf(pg) != int(lifecycle.CurrentAttempt(pcs, replica)) {
			continue
		}
		current++
		c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		switch {
		case c == nil:
			pending = append(pending, pg.Name)
		case c.Status == metav1.ConditionTrue:
			placed++
		default:
			unplaced = append(unplaced, fmt.Sprintf("%s (%s: %s)", pg.Name, c.Reason, trimMessage(c.Message)))
		}
	}
	if current == 0 {
		return nil
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypePodGangsScheduled, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case len(unplaced) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonGangUnschedulable
		cond.Message = fmt.Sprintf("the scheduler cannot place %d of %d gangs: %s", len(unplaced), current, nameSome(unplaced, "; "))
	case len(pending) > 0:
		cond.Status, cond.Reason = metav1.ConditionUnknown, copsev1alpha1.ReasonGangsPending
		cond.Message = fmt.Sprintf("%d of %d gangs placed; waiting for the scheduler to place %s", placed, current, nameSome(pending, ", "))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled
		cond.Message = fmt.Sprintf("all %d gangs were placed", current)
	}
	return &cond
}

// nameSome joins up to maxGangsNamed items, sorted, and counts the rest.
func nameSome(items []string, sep string) string {
	sort.Strings(items)
	named := items[:min(len(items), maxGangsNamed)]
	out := strings.Join(named, sep)
	if more := len(items) - len(named); more > 0 {
		out += fmt.Sprintf("%s%d more", sep, more)
	}
	return out
}

func trimMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if len(msg) <= maxSchedulerMessage {
		return msg
	}
	return msg[:maxSchedulerMessage] + "..."
}
