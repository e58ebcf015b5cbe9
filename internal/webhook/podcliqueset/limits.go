package podcliqueset

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// ValidateSize applies the operator's limits to the pods pcs asks for
// (package podcount counts them, autoscalers at their maxReplicas):
//
//   - at most limits.maxPodsPerReplica in one replica, reported at the field
//     that contributes most (a clique's or scaling group's replicas or
//     maxReplicas);
//   - at most limits.maxPodsPerPodCliqueSet over all replicas, reported at
//     spec.replicas. With a single replica the total is the replica's
//     count, which the first rule already reports (a replica's limit is
//     never above the whole set's), so it is checked from two replicas on.
//
// old is nil on create. On update only a change that adds pods is refused
// (rules.PodLimit.Check), so that a PodCliqueSet stored over the limits can
// still be edited and shrunk.
func ValidateSize(old, pcs *copsev1alpha1.PodCliqueSet, limits configv1alpha1.LimitsConfiguration) field.ErrorList {
	count := podcount.PodCliqueSet(&pcs.Spec)
	var before podcount.Count
	if old != nil {
		before = podcount.PodCliqueSet(&old.Spec)
	}
	var errs field.ErrorList
	if count.LargestField != nil {
		errs = rules.MaxPodsPerReplica(limits).Check(before.PerReplica, count.PerReplica,
			"a replica of this PodCliqueSet", count.LargestField, count.LargestValue)
	}
	if pcs.Spec.Replicas > 1 {
		subject := fmt.Sprintf("this PodCliqueSet (%d replicas of %s pods)", pcs.Spec.Replicas, rules.PodsText(count.PerReplica))
		errs = append(errs, rules.MaxPodsPerPodCliqueSet(limits).Check(before.Total, count.Total,
			subject, specPath.Child("replicas"), int64(pcs.Spec.Replicas))...)
	}
	return errs
}
