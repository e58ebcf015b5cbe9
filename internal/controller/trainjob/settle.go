package trainjob

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/requeue"
)

// The settle step: how the pass's writes went becomes the second status
// write (settleWrites, pure, made by the writer) and the pass's result
// (settle).

// settleWrites records how the build's writes went: a write the API server
// refused becomes the TrainJob's Failed condition (reason BackendRejected)
// or its BackendRefused condition, retried (classifyRefusal); writes that
// went through clear BackendRefused. Any other failure writes nothing: it
// is returned, and so retried with back-off.
func settleWrites(now time.Time) func(written client.Object, out children.Outcome) (client.Object, []children.Event) {
	return func(written client.Object, out children.Outcome) (client.Object, []children.Event) {
		tj := written.(*trainerv1alpha1.TrainJob)
		refusal, _, isRefusal := refusalOf(out, tj)
		if out.Failed(children.OwnWritesStep) && !isRefusal {
			return nil, nil
		}
		settled := tj.DeepCopy()
		if isRefusal {
			recordRefusal(&settled.Status, refusal, now)
		} else {
			meta.RemoveStatusCondition(&settled.Status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
		}
		return settled, transitionEvents(tj.Status, settled.Status)
	}
}

// refusalOf finds the refused write of a pass's writes, sorted as the
// TrainJob records it.
func refusalOf(out children.Outcome, tj *trainerv1alpha1.TrainJob) (backendRefusal, *refusedWrite, bool) {
	for _, err := range out.Errors[children.OwnWritesStep] {
		if write, ok := asRefusedWrite(err); ok {
			return classifyRefusal(write, tj.Spec.Suspend != nil && *tj.Spec.Suspend), write, true
		}
	}
	return backendRefusal{}, nil, false
}

// settle is the pass's result: the next deadline or TTL, a refused write's
// retry (none for a terminal refusal: the Failed condition brings the
// TrainJob back for its TTL), a conflict retried soon, any other failure
// with back-off.
func (r *Reconciler) settle(ctx context.Context, plan passPlan, out children.Outcome) (ctrl.Result, error) {
	if result, ended, err := out.EndedAtStatus(); ended {
		return result, errors.Join(err, plan.err)
	}
	logger := log.FromContext(ctx)
	if plan.waiting != "" {
		logger.V(1).Info(plan.waiting)
	}
	if plan.ttl != nil && !out.Failed(stepTTL) {
		logger.Info("deleted the finished TrainJob: its ttlSecondsAfterFinished passed", "ttlSecondsAfterFinished", *plan.ttl)
	}
	if refusal, write, ok := refusalOf(out, plan.Observed.(*trainerv1alpha1.TrainJob)); ok && !out.Failed(children.StatusStep) {
		logger.Info("the API server refused a write of the TrainJob's backend", "terminal", refusal.Terminal,
			"reason", refusal.Reason, "error", write.err.Error())
		if refusal.Terminal {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: sooner(plan.RequeueAfter, refusal.Retry)}, nil
	}
	err := errors.Join(plan.err, out.Err())
	switch {
	case err == nil:
		return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
	case plan.err == nil && apierrors.IsConflict(err):
		// The runtime marked in use by another TrainJob meanwhile, say.
		return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
	}
	return ctrl.Result{}, err
}
