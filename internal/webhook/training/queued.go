package training

import (
	"fmt"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/podcount"
)

// QueuedScale is the rule for scaling a PodClique or PodCliqueScalingGroup
// of a PodCliqueSet queued through Kueue (owner has the label
// kueue.x-k8s.io/queue-name and kueueEnabled is the operator
// configuration's kueue.enabled): its Workload asked Kueue for quota for
// the template's counts (a clique's or group's replicas, or its
// autoscaler's maxReplicas), so a scale-up beyond admitted would run pods
// that no quota covers. Within that bound, and downwards, scaling is free;
// a bigger size is a change of the PodCliqueSet's template, which requeues
// its Workload. what names the object's template ("clique \"worker\"").
// admitted < 0 means the template has no such entry (the object is not
// the PodCliqueSet's own): nothing is checked.
func QueuedScale(path *field.Path, owner *copsev1alpha1.PodCliqueSet, kueueEnabled bool, oldReplicas, replicas int32, admitted int64, what string) field.ErrorList {
	if !kueueEnabled || owner == nil || kueue.QueueName(owner) == "" || admitted < 0 ||
		replicas <= oldReplicas || int64(replicas) <= admitted {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"may be at most %d: PodCliqueSet %s is queued through Kueue (label %s=%s) and its Workload holds quota for %d of %s; "+
			"change spec.template of the PodCliqueSet instead, which queues it again for the new size",
		admitted, ownerName(owner), kueue.QueueNameLabel, kueue.QueueName(owner), admitted, what))}
}

// AdmittedCliqueReplicas is the most pods one PodClique made from clique
// template name may have under owner's Workload: the template's replicas or
// its autoscaler's maxReplicas; -1 when the template has no such clique.
func AdmittedCliqueReplicas(owner *copsev1alpha1.PodCliqueSet, name string) int64 {
	for _, c := range owner.Spec.Template.Cliques {
		if c != nil && c.Name == name {
			pods, _ := podcount.Clique(&c.Spec, nil)
			return pods
		}
	}
	return -1
}

// AdmittedGroupReplicas is the most replicas a PodCliqueScalingGroup of
// the member cliques may have under owner's Workload: the group config's
// replicas or its autoscaler's maxReplicas; -1 when no group config of the
// template has those cliques. It also returns the config's name.
func AdmittedGroupReplicas(owner *copsev1alpha1.PodCliqueSet, members []string) (int64, string) {
	i := slices.IndexFunc(owner.Spec.Template.PodCliqueScalingGroupConfigs, func(g grovecorev1alpha1.PodCliqueScalingGroupConfig) bool {
		return len(members) > 0 && slices.Contains(g.CliqueNames, members[0])
	})
	if i < 0 {
		return -1, ""
	}
	group := &owner.Spec.Template.PodCliqueScalingGroupConfigs[i]
	return podcount.ScalingGroupReplicas(group), group.Name
}
