package podcliquescalinggroup

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/requeue"
)

// settleRecreations is the pass's settle step (pure): one
// EventGroupReplicaRecreated per recreated group replica, naming the
// objects whose deletion went through (or found them gone already), and
// none for a replica none of whose deletions did. The writer makes the
// deletions first of all its object writes, each within the budget in
// plan order, so the first budget ones are those it attempted; the rest
// wait for the next pass and are not named. It writes no second status.
func settleRecreations(minAvailable int32, recreations []recreation, budget int) func(client.Object, children.Outcome) (client.Object, []children.Event) {
	return func(_ client.Object, out children.Outcome) (client.Object, []children.Event) {
		var events []children.Event
		for start, end := 0, 0; start < len(recreations); start = end {
			j := recreations[start].replica
			var names []string
			for end = start; end < len(recreations) && recreations[end].replica == j; end++ {
				if end < budget && !out.Failed(recreations[end].step()) {
					names = append(names, recreations[end].object.GetName())
				}
			}
			if len(names) > 0 {
				events = append(events, children.Event{Type: corev1.EventTypeWarning, Reason: EventGroupReplicaRecreated, Action: "Recreate",
					Message: fmt.Sprintf("group replica %d stayed below minAvailable for longer than terminationDelay while the group still meets its minAvailable %d; recreating its PodCliques %v",
						j, minAvailable, names)})
			}
		}
		return nil, events
	}
}

// resultOf is the pass's result from what the writer did: a conflict, or
// the group gone, ends the pass at the status write with nothing else
// written; otherwise the recreations' requeue, sooner when the write
// budget left work for the next pass, with the writes' errors and those
// known before them.
func resultOf(plan passPlan, out children.Outcome) (ctrl.Result, error) {
	if result, ended, err := out.EndedAtStatus(); ended {
		return result, err
	}
	result := ctrl.Result{RequeueAfter: plan.RequeueAfter}
	if out.CutShort {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: requeue.Soon})
	}
	return result, errors.Join(out.Err(), plan.known)
}
