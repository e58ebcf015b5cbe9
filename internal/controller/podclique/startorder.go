package podclique

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
)

// startOrder is where a clique stands in its replica's start order.
type startOrder struct {
	// gated: the clique starts after cliques that must be Ready (or done)
	// first, so its pods carry a startup gate.
	gated bool
	// waitingForReady are the predecessors neither Ready nor done yet
	// (blueprint.SiblingClique.ReadyOrDone); the gate stays closed while
	// there are any.
	waitingForReady []string
	// successGated: the clique waits for cliques to succeed before any of
	// its pods is created; waitingForSuccess are those not succeeded yet.
	successGated      bool
	waitingForSuccess []string
	// inPlace: the workload restarts its replicas in place, so every pod
	// carries a startup gate, the barrier between attempts.
	inPlace bool
	// barrier: a pod of the replica may still run an earlier attempt
	// (lifecycle.ReplicaState.Barrier); the gates stay closed.
	barrier bool
}

// startOrderInput is what decideStartOrder reads.
type startOrderInput struct {
	// readyPredecessors and successPredecessors are the clique's entries of
	// blueprint.GatePredecessors and blueprint.SuccessPredecessors.
	readyPredecessors   []string
	successPredecessors []string
	groupMinAvailable   map[string]int
	// scope confines the start order to the clique's gang.
	scope    blueprint.StartScope
	siblings []blueprint.SiblingClique
}

// decideStartOrder is the clique's start order from its siblings (the
// PodCliques of the same replica and attempt).
func decideStartOrder(in startOrderInput) startOrder {
	return startOrder{
		gated:             len(in.readyPredecessors) > 0,
		waitingForReady:   blueprint.NotReadyPredecessors(in.readyPredecessors, in.groupMinAvailable, in.scope, in.siblings),
		successGated:      len(in.successPredecessors) > 0,
		waitingForSuccess: blueprint.NotSucceededPredecessors(in.successPredecessors, in.siblings),
	}
}

// gateForNewPods is the gate state a pod created now starts with; "" when
// the clique's pods have no gate.
func (o startOrder) gateForNewPods() string {
	switch {
	case !o.gated && !o.inPlace:
		return ""
	case len(o.waitingForReady) > 0 || o.barrier:
		return labels.StartupGateClosed
	default:
		return labels.StartupGateOpen
	}
}

// gateOpening is what gatesToOpen decided.
type gateOpening struct {
	pods []podstate.Summary
	// truncated: more gates are to open than the budget allowed.
	truncated bool
}

// gatesToOpen are the pods whose closed gate may open now: every
// predecessor is Ready or done, and no pod of the replica runs an earlier
// attempt. Within an attempt a gate once open is never closed again (only
// the adoption into a new attempt closes it), and a pod that is
// terminating or ended is left alone. At most budget are opened.
func gatesToOpen(o startOrder, pods []podstate.Summary, budget int) gateOpening {
	var out gateOpening
	if (!o.gated && !o.inPlace) || len(o.waitingForReady) > 0 || o.barrier {
		return out
	}
	for _, p := range pods {
		if p.StartupGate != labels.StartupGateClosed || !p.Active() {
			continue
		}
		if len(out.pods) >= budget {
			out.truncated = true
			break
		}
		out.pods = append(out.pods, p)
	}
	return out
}

// startupBlockedCondition is the StartupBlocked condition, or nil for a
// clique that starts after no other clique.
func startupBlockedCondition(o startOrder) *metav1.Condition {
	switch {
	case len(o.waitingForSuccess) > 0:
		return &metav1.Condition{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionTrue,
			Reason:  copsev1alpha1.ReasonWaitingForSucceeded,
			Message: fmt.Sprintf("no pod is created until clique(s) %s of the replica have succeeded", strings.Join(o.waitingForSuccess, ", "))}
	case o.gated && len(o.waitingForReady) > 0:
		return &metav1.Condition{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionTrue,
			Reason:  copsev1alpha1.ReasonWaitingForReady,
			Message: fmt.Sprintf("the pods' containers start once clique(s) %s of the replica are Ready (minAvailable pods ready or exited 0)", strings.Join(o.waitingForReady, ", "))}
	case o.barrier:
		return &metav1.Condition{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionTrue,
			Reason:  copsev1alpha1.ReasonWaitingForPreviousAttempt,
			Message: "the replica restarts in place: the pods' containers start once no pod of the replica runs the previous attempt (every kept pod restarted to its startup gate); if that takes longer than the operator's scheduler.inPlaceRestartTimeout, the replica is recreated"}
	case o.gated || o.successGated:
		return &metav1.Condition{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionFalse,
			Reason: copsev1alpha1.ReasonPredecessorsDone, Message: "the cliques this clique starts after are done"}
	}
	return nil
}

// startScope is the part of its replica a clique's start order keeps to:
// for Inference, a clique of a scaling-group replica at or beyond the
// group's minAvailable is scoped to that group replica, as in Grove.
// Training keeps the whole replica's order (GREP-0285 restarts replicas
// whole, and its start order is unchanged).
func startScope(pcs *copsev1alpha1.PodCliqueSet, id blueprint.CliqueIdentity, groupMinAvailable map[string]int) blueprint.StartScope {
	if pcs.IsTraining() || !id.Grouped() {
		return blueprint.StartScope{}
	}
	need, ok := groupMinAvailable[id.Clique]
	if !ok || id.ScalingGroupReplica < need {
		return blueprint.StartScope{}
	}
	return blueprint.StartScope{Scaled: true, Group: blueprint.CliqueScalingGroups(pcs)[id.Clique], GroupReplica: id.ScalingGroupReplica}
}

// siblingSelector selects the PodCliques of a clique's replica and attempt.
func siblingSelector(id blueprint.CliqueIdentity) client.MatchingLabels {
	return client.MatchingLabels{
		labels.PartOfKey:  id.PodCliqueSet,
		labels.ReplicaKey: strconv.Itoa(id.Replica),
		labels.AttemptKey: strconv.Itoa(id.Attempt),
	}
}

func siblingOf(pclq *copsev1alpha1.PodClique) blueprint.SiblingClique {
	j, grouped := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
	return blueprint.SiblingClique{
		Template:          pclq.Labels[labels.CliqueTemplateKey],
		Grouped:           grouped && pclq.Labels[labels.ScalingGroupKey] != "",
		GroupReplica:      j,
		ReadyReplicas:     int(pclq.Status.ReadyReplicas),
		SucceededReplicas: lifecycle.RecordedSucceeded(pclq).CountBelow(int(pclq.Spec.Replicas)),
		MinAvailable:      int(pclq.MinAvailable()),
		Succeeded:         meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded),
	}
}

// startOrderSignalChanged passes PodClique status updates that can move a
// sibling in the start order: the clique became ReadyOrDone or stopped
// being so, or it gained the Succeeded condition.
func startOrderSignalChanged() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesOnly, func(old, cur *copsev1alpha1.PodClique) bool {
		was, is := siblingOf(old), siblingOf(cur)
		// A clique of a scaled gang held in its base gang's domain waits
		// for the base gang's pods to be placed (creations).
		placed := (old.Status.ScheduledReplicas > 0) != (cur.Status.ScheduledReplicas > 0)
		return was.ReadyOrDone() != is.ReadyOrDone() || was.Succeeded != is.Succeeded || placed
	})
}
