package podcliquescalinggroup

import (
	"slices"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// groupRecreations is which group replicas to recreate now, and when to
// look again for breaches that have not lasted terminationDelay yet.
type groupRecreations struct {
	replicas     []int
	requeueAfter time.Duration
}

// decideGroupReplicaRecreations applies Grove's gang termination at the
// level of one scaling-group replica (Inference): a group replica one of
// whose cliques has been breached (MinAvailableBreached=True) for at least
// delay is recreated on its own, provided the group still has minAvailable
// available replicas without it. Otherwise the group itself is breached,
// and the PodCliqueSet controller recreates the whole PodCliqueSet replica
// instead. available is the group's available replicas (a breached group
// replica is never among them).
func decideGroupReplicaRecreations(minAvailable, available int32, cliques []copsev1alpha1.PodClique, delay time.Duration, now time.Time) groupRecreations {
	var d groupRecreations
	if available < minAvailable {
		return d
	}
	breachedSince := map[int]time.Time{}
	for i := range cliques {
		c := &cliques[i]
		cond := meta.FindStatusCondition(c.Status.Conditions, constants.ConditionTypeMinAvailableBreached)
		j := groupReplicaLabel(c)
		if cond == nil || cond.Status != metav1.ConditionTrue || j < 0 || !c.DeletionTimestamp.IsZero() {
			continue
		}
		if since, seen := breachedSince[j]; !seen || cond.LastTransitionTime.Time.Before(since) {
			breachedSince[j] = cond.LastTransitionTime.Time
		}
	}
	for j, since := range breachedSince {
		remaining := since.Add(delay).Sub(now)
		if remaining <= 0 {
			d.replicas = append(d.replicas, j)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	slices.Sort(d.replicas)
	return d
}
