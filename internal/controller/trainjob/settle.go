package trainjob

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// Reasons of the BackendRefused condition: why the API server refused the
// backend object (or an object copse makes for it) for now.
const (
	// reasonResourceQuota: a ResourceQuota of the namespace refused it: it
	// has no room, or its usage is not counted yet.
	reasonResourceQuota = "ResourceQuota"
	// reasonForbidden: refused for another reason that may pass (the
	// namespace is being deleted, permissions).
	reasonForbidden = "Forbidden"
	// reasonConflict: the object changed, or was created, meanwhile.
	reasonConflict = "Conflict"
	// reasonServerUnavailable: the API server or a webhook could not answer.
	reasonServerUnavailable = "ServerUnavailable"
	// reasonRebuildRefused: the update of a suspended TrainJob's backend
	// object to its new build was refused; the TrainJob's runtime patches
	// may still change before it runs (Kueue rewrites them at admission).
	reasonRebuildRefused = "RebuildRefused"
	// reasonNotControlled: an object of the backend's kind and the
	// TrainJob's name exists that the TrainJob does not control.
	reasonNotControlled = "NotControlled"
)

// How long a TrainJob waits before it tries a refused write again. A quota
// or a foreign object changes by someone's hand, and neither wakes the
// TrainJob, so it looks again at a steady pace; a conflict passes at once.
const (
	refusalRetry  = 15 * time.Second
	conflictRetry = time.Second
)

// writeOp is what a refused write was doing.
type writeOp string

const (
	opCreate writeOp = "create"
	opUpdate writeOp = "update"
)

// refusedWrite is the error of a create or update the API server refused,
// with the object it was about: the build's writes return it, and settle
// records it on the TrainJob (classifyRefusal).
type refusedWrite struct {
	op   writeOp
	kind string
	name string
	err  error
}

func (e *refusedWrite) Error() string {
	return fmt.Sprintf("%s %s %s: %v", e.op, e.kind, e.name, e.err)
}

func (e *refusedWrite) Unwrap() error { return e.err }

// refused wraps the error of a write of the backend's objects, nil for nil.
func refused(op writeOp, kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &refusedWrite{op: op, kind: kind, name: name, err: err}
}

// backendRefusal is a refused write as the TrainJob records it.
type backendRefusal struct {
	// Terminal: the refusal cannot pass by itself: the TrainJob fails
	// (Failed, reason BackendRejected). Otherwise it is the BackendRefused
	// condition with Reason, retried after Retry.
	Terminal bool
	Reason   string
	Retry    time.Duration
	// Message names the object and quotes the API server.
	Message string
}

// classifyRefusal sorts a refused write of the backend's objects:
//
//   - Invalid, or denied by an admission webhook (JobSet's webhook denies
//     with Forbidden and "denied the request"): the object as built is
//     wrong, and the build is fixed by the TrainJob and its runtime
//     snapshot, so it fails the TrainJob. The one exception is an update of
//     a suspended TrainJob's object: its runtime patches may still change
//     before it runs, so that waits (RebuildRefused).
//   - a ResourceQuota without room (or whose usage is not counted yet),
//     another Forbidden (the namespace being
//     deleted), a conflict or an object that already exists, and whatever
//     says the server could not answer (unavailable, timeout, throttled, a
//     webhook that could not be called): retried, and said on the
//     BackendRefused condition.
func classifyRefusal(write *refusedWrite, trainJobSuspended bool) backendRefusal {
	err := write.err
	quoted := fmt.Sprintf("the API server refused to %s %s %s: %v", write.op, write.kind, write.name, err)
	specRefused := apierrors.IsInvalid(err) || (apierrors.IsForbidden(err) && deniedByWebhook(err))
	switch {
	case specRefused && write.op == opUpdate && trainJobSuspended:
		return backendRefusal{Reason: reasonRebuildRefused, Retry: refusalRetry,
			Message: quoted + "; retried while the TrainJob is suspended, as its runtime patches may still change"}
	case specRefused:
		return backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason,
			Message: quoted + "; the object is built from the TrainJob and its runtime snapshot, so this cannot pass by itself"}
	case apierrors.IsForbidden(err) && quotaRefused(err):
		return backendRefusal{Reason: reasonResourceQuota, Retry: refusalRetry, Message: quoted + "; retried until the quota admits it"}
	case apierrors.IsForbidden(err):
		return backendRefusal{Reason: reasonForbidden, Retry: refusalRetry, Message: quoted + "; retried"}
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return backendRefusal{Reason: reasonConflict, Retry: conflictRetry, Message: quoted + "; retried"}
	default:
		return backendRefusal{Reason: reasonServerUnavailable, Retry: refusalRetry, Message: quoted + "; retried"}
	}
}

// deniedByWebhook reports whether the API server says an admission webhook
// denied the request (as opposed to RBAC or quota, which are Forbidden too).
func deniedByWebhook(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request")
}

// quotaRefused reports whether the API server's quota admission refused the
// request: "exceeded quota: ..." when the quota has no room, "status
// unknown for quota: ..." while the quota controller has not counted its
// usage.
func quotaRefused(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "exceeded quota:") || strings.Contains(msg, "for quota:")
}

// asRefusedWrite finds a refused write in the writes' errors.
func asRefusedWrite(err error) (*refusedWrite, bool) {
	var write *refusedWrite
	return write, errors.As(err, &write)
}

// recordRefusal puts a refusal on the status: a terminal one as the Failed
// condition (and no BackendRefused any more), another as BackendRefused=True.
func recordRefusal(status *trainerv1alpha1.TrainJobStatus, refusal backendRefusal, now time.Time) {
	if refusal.Terminal {
		setCondition(status, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobBackendRejectedReason, refusal.Message, now)
		meta.RemoveStatusCondition(&status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
		return
	}
	setCondition(status, trainerv1alpha1.TrainJobBackendRefused, refusal.Reason, refusal.Message, now)
}
