package podcliquescalinggroup

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// ValidateSize refuses a PodCliqueScalingGroup with more pods than one
// PodCliqueSet replica may have (limits.maxPodsPerReplica): its replicas
// times the pods of one group replica, the replicas of its cliques in the
// template of owner, the PodCliqueSet it belongs to. The PodCliqueSet webhook
// bounds the groups it is created from; this catches groups scaled or
// written directly (Inference ones may be).
//
// Without an owner nothing is checked: the operator creates the PodCliques
// of a group from its PodCliqueSet's template, so a group without one gets
// none. old is nil on create; on update only a change that adds pods is
// refused.
func ValidateSize(old, pcsg *copsev1alpha1.PodCliqueScalingGroup, owner *copsev1alpha1.PodCliqueSet,
	limits configv1alpha1.LimitsConfiguration) field.ErrorList {
	if owner == nil {
		return nil
	}
	pods, perGroupReplica := podcount.ScalingGroup(&owner.Spec, pcsg.Spec.CliqueNames, pcsg.Spec.Replicas)
	var before int64
	if old != nil {
		before, _ = podcount.ScalingGroup(&owner.Spec, old.Spec.CliqueNames, old.Spec.Replicas)
	}
	return rules.ScalingGroupWithinLimit(before, pods, perGroupReplica, replicasPath, pcsg.Spec.Replicas, limits)
}

// sizeRulesConcern reports whether ValidateSize could refuse the change
// from old (nil on create) to pcsg for some owner: a creation, more
// replicas, or other cliques. Only then does the webhook read the owner.
func sizeRulesConcern(old, pcsg *copsev1alpha1.PodCliqueScalingGroup) bool {
	return old == nil || pcsg.Spec.Replicas > old.Spec.Replicas || !slices.Equal(old.Spec.CliqueNames, pcsg.Spec.CliqueNames)
}
