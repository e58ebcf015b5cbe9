package rules

import (
	"fmt"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// PodLimit is one of the operator's limits on pods (the limits section of
// its configuration), named by its configuration field so that a refusal
// says which setting refused it.
type PodLimit struct {
	// Setting is the configuration field, e.g. limits.maxPodsPerReplica.
	Setting *field.Path
	// Max is its value.
	Max int64
}

var limitsPath = field.NewPath("limits")

// MaxPodsPerReplica is the limit on the pods of one PodCliqueSet replica,
// which also bounds any one PodClique or PodCliqueScalingGroup.
func MaxPodsPerReplica(limits configv1alpha1.LimitsConfiguration) PodLimit {
	return PodLimit{Setting: limitsPath.Child("maxPodsPerReplica"), Max: limits.MaxPodsPerReplica}
}

// MaxPodsPerPodCliqueSet is the limit on the pods of a PodCliqueSet over all
// its replicas.
func MaxPodsPerPodCliqueSet(limits configv1alpha1.LimitsConfiguration) PodLimit {
	return PodLimit{Setting: limitsPath.Child("maxPodsPerPodCliqueSet"), Max: limits.MaxPodsPerPodCliqueSet}
}

// Check returns an error when a change takes subject (e.g. "this
// PodClique") from oldPods pods (0 on create) to pods, more than the limit
// allows, reported at path, the field that contributes most, whose value is
// value.
//
// A change that does not add pods is always allowed, even when the object
// is over the limit: an object stored before the limit existed or was
// lowered must stay editable, and shrinking it must not need a single step
// under the limit.
func (l PodLimit) Check(oldPods, pods int64, subject string, path *field.Path, value int64) field.ErrorList {
	if pods <= l.Max || pods <= oldPods {
		return nil
	}
	return field.ErrorList{field.Invalid(path, value, fmt.Sprintf("%s would have %s pods, more than the operator's limit %s=%d",
		subject, PodsText(pods), l.Setting, l.Max))}
}

// PodsText writes a pod count for a message. Counts saturate at
// math.MaxInt64 (package podcount), so that value means "at least", and is
// written as more than the largest exact count.
func PodsText(pods int64) string {
	if pods == math.MaxInt64 {
		return "more than " + strconv.FormatInt(math.MaxInt64-1, 10)
	}
	return strconv.FormatInt(pods, 10)
}

// PodCliqueWithinLimit refuses a change of a PodClique from oldPods to pods
// (0 on create) that gives it more pods than one PodCliqueSet replica may
// have; path is the field that sets the count.
func PodCliqueWithinLimit(oldPods, pods int64, path *field.Path, limits configv1alpha1.LimitsConfiguration) field.ErrorList {
	return MaxPodsPerReplica(limits).Check(oldPods, pods, "this PodClique", path, pods)
}

// ScalingGroupWithinLimit refuses a change of a PodCliqueScalingGroup from
// oldPods to pods (0 on create) that gives it more pods than one
// PodCliqueSet replica may have. Its pods are its replicas (the value of
// path) times perGroupReplica, the pods of one group replica.
func ScalingGroupWithinLimit(oldPods, pods, perGroupReplica int64, path *field.Path, replicas int32,
	limits configv1alpha1.LimitsConfiguration) field.ErrorList {
	subject := fmt.Sprintf("this PodCliqueScalingGroup (%s pods per replica)", PodsText(perGroupReplica))
	return MaxPodsPerReplica(limits).Check(oldPods, pods, subject, path, int64(replicas))
}
