package podcliqueset

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/requeue"
)

// stepOrder is the order the pass's steps are reported in, in
// status.lastErrors and in the error it returns.
var stepOrder = []grovecorev1alpha1.ErrorCode{errCodeRecreateReplica, errCodeTerminatePods, errCodeSyncChildren, errCodeRollingUpdate}

// failuresOf are the pass's failures by step: those known before any
// write, then the writes that failed.
func failuresOf(decided stepFailures, out children.Outcome) stepFailures {
	failures := decided
	for _, code := range stepOrder {
		for _, err := range out.Errors[string(code)] {
			failures.add(code, err)
		}
	}
	return failures
}

// settleFailures is the pass's settle step (pure): status.lastErrors says
// which steps failed, written in a second patch only when that changed (an
// error appears, or the last one is gone).
func settleFailures(decided stepFailures, now time.Time) func(client.Object, children.Outcome) (client.Object, []children.Event) {
	return func(written client.Object, out children.Outcome) (client.Object, []children.Event) {
		pcs := written.(*copsev1alpha1.PodCliqueSet)
		lastErrors := failuresOf(decided, out).lastErrors(pcs.Status.LastErrors, now)
		if apiequality.Semantic.DeepEqual(lastErrors, pcs.Status.LastErrors) {
			return nil, nil
		}
		settled := pcs.DeepCopy()
		settled.Status.LastErrors = lastErrors
		return settled, nil
	}
}

// resultOf is what a pass returns after its writes: a status decided on a
// stale view is decided again soon from fresh data; failed steps are
// retried with back-off; work the write budget (or the moves' time bound)
// left is taken up at once; otherwise the decision's own requeue.
func resultOf(plan passPlan, out children.Outcome) (ctrl.Result, error) {
	if result, ended, err := out.EndedAtStatus(); ended {
		return result, err
	}
	if err := failuresOf(plan.failures, out).err(); err != nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: plan.RequeueAfter}
	if out.CutShort || out.PodsLeft > 0 {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: requeue.Soon})
	}
	return result, nil
}
