package blueprint

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// A replica packed at a level (the template's pack.required) stays in one
// domain of it with its scaled gangs: the base gang's PodGroup picks the
// domain, and each scaled gang, a PodGroup of its own packed at its own key,
// is placed inside that domain. The kube-scheduler has no constraint tying
// one PodGroup to another's domain, and pod affinity cannot say it either:
// it counts only existing pods that match every required term of a pod, and
// no pod is both in the base gang and in a scaled gang's own scopes (its
// gang, scaling-group replica and clique terms). So the PodClique controller
// creates a scaled gang's pods once the base gang is placed, with a node
// selector for its domain (PodContext.HoldIn): the scheduler then places the
// scaled gang in a domain of its own key inside it, or leaves it Pending
// while there is no room, and says so on its PodGroup.

// BaseGangHoldKey is the node label key whose base-gang domain the pods of
// pclq must be created in: the replica's required key
// (labels.ReplicaDomainKeyAnnotation) for a PodClique of a scaling-group
// replica that is a scaled gang (its gang label is not the replica's base
// gang); "" for every other PodClique.
func BaseGangHoldKey(pclq *copsev1alpha1.PodClique, id CliqueIdentity) string {
	key := pclq.Annotations[labels.ReplicaDomainKeyAnnotation]
	if key == "" || !id.Grouped() || id.Gang == "" || id.Gang == naming.BaseGang(id.PodCliqueSet, id.Replica) {
		return ""
	}
	return key
}

// BaseGangHold is where a scaled gang's pods held at key are created:
// holdIn is the node selector of the base gang's domain, read from the
// labels of the nodes the base gang's pods are bound to (boundNodes, one
// entry per bound pod of its current run); bound pods of one gang share the
// domain (its PodGroup is packed at key), so the first found is taken. wait
// is true while none of its pods is bound: the scaled gang's pods are not
// created yet. When bound pods are on nodes that lack key (the binding
// changed since), the pods are created without a hold.
func BaseGangHold(key string, boundNodes []map[string]string) (holdIn map[string]string, wait bool) {
	if len(boundNodes) == 0 {
		return nil, true
	}
	for _, l := range boundNodes {
		if v, found := l[key]; found {
			return map[string]string{key: v}, false
		}
	}
	return nil, false
}
