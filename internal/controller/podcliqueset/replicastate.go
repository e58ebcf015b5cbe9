package podcliqueset

import (
	"fmt"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// replicaHealth is what the PodCliqueSet controller knows of one replica
// from its children's conditions.
type replicaHealth struct {
	index int
	// complete: every standalone PodClique and scaling group of the replica exists.
	complete bool
	// available: complete, and none of them reports MinAvailableBreached
	// other than False.
	available bool
	// breached: at least one reports MinAvailableBreached=True; breachedSince
	// is the earliest such transition. For Inference the condition is only
	// True for a child that was available before, so a replica that never
	// became healthy is never torn down. For Training a failed pod is a
	// breach at once (reason PodsFailed): the job cannot progress without it.
	breached      bool
	breachedSince time.Time
	// breachedBy names the children that are breached, for events.
	breachedBy []string
	// succeeded: complete, and every member has Succeeded=True (Training).
	succeeded bool
}

// member is one standalone PodClique or scaling group of a replica, reduced
// to what replica health depends on.
type member struct {
	name       string
	conditions []metav1.Condition
}

// assessReplica derives a replica's health from its members. expected is
// how many members a complete replica has.
func assessReplica(index, expected int, members []member) replicaHealth {
	h := replicaHealth{index: index, complete: len(members) >= expected}
	allFalse := true
	allSucceeded := true
	for _, m := range members {
		if succ := findCondition(m.conditions, copsev1alpha1.ConditionTypeSucceeded); succ == nil || succ.Status != metav1.ConditionTrue {
			allSucceeded = false
		}
		cond := findCondition(m.conditions, constants.ConditionTypeMinAvailableBreached)
		if cond == nil || cond.Status != metav1.ConditionFalse {
			allFalse = false
		}
		if cond != nil && cond.Status == metav1.ConditionTrue {
			since := cond.LastTransitionTime.Time
			if !h.breached || since.Before(h.breachedSince) {
				h.breachedSince = since
			}
			h.breached = true
			h.breachedBy = append(h.breachedBy, fmt.Sprintf("%s (%s)", m.name, cond.Reason))
		}
	}
	h.available = h.complete && allFalse && expected > 0
	h.succeeded = h.complete && allSucceeded && expected > 0
	return h
}

func findCondition(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}
