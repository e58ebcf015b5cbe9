package podclique

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/requeue"
)

// stepTally is what the writer did with one step's pod writes.
type stepTally struct {
	planned, done int
	errs          []error
}

// started reports whether any of the step's writes was made (went through
// or failed); the budget, the time bound or an earlier failure may have
// left them all for the next pass.
func (t stepTally) started() bool { return t.done > 0 || len(t.errs) > 0 }

func (t stepTally) err() error { return errors.Join(t.errs...) }

// tallyPods sums the writer's outcome of the pod writes by step.
func tallyPods(pods []children.PodWrite, out children.Outcome) map[string]stepTally {
	tally := map[string]stepTally{}
	for i, p := range pods {
		t := tally[p.Step]
		t.planned++
		if i < len(out.PodDone) && out.PodDone[i] {
			t.done++
		}
		if i < len(out.PodErrors) && out.PodErrors[i] != nil {
			t.errs = append(t.errs, out.PodErrors[i])
		}
		tally[p.Step] = t
	}
	return tally
}

// settleWrites is the pass's settle step (pure): the events that tell what
// the pod writes did, and the status a creation attempt leaves
// (statusAfterAttempt: a refusal recorded with its time, from which the
// back-off is derived, or cleared by a creation that went through). A
// creation that failed otherwise records nothing: it is retried with
// back-off.
func settleWrites(o *observation, pods []children.PodWrite, deletions []podDeletion) func(client.Object, children.Outcome) (client.Object, []children.Event) {
	return func(owner client.Object, out children.Outcome) (client.Object, []children.Event) {
		written := owner.(*copsev1alpha1.PodClique)
		tally := tallyPods(pods, out)
		var events []children.Event
		event := func(eventType, reason, action, format string, args ...any) {
			events = append(events, children.Event{Type: eventType, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)})
		}
		if t := tally[stepAdopt]; t.done > 0 {
			event(corev1.EventTypeNormal, EventReasonPodsAdopted, "AdoptPods",
				"Adopted %d pod(s) the replica's restart in place kept, moved to attempt %d; their containers restart where they are", t.done, o.id.Attempt)
		}
		if t := tally[stepDelete]; t.done > 0 {
			event(corev1.EventTypeNormal, EventReasonPodsDeleted, "DeletePods", "Deleted %d pod(s) (planned: %s)", t.done, causeCounts(deletions))
		}
		if t := tally[stepDelete]; len(t.errs) > 0 {
			event(corev1.EventTypeWarning, EventReasonPodDeleteFailed, "DeletePods", "Deleted %d of %d pod(s): %v", t.done, t.planned, t.err())
		}
		if t := tally[stepOpenGates]; t.done > 0 {
			event(corev1.EventTypeNormal, EventReasonStartupGatesOpened, "OpenStartupGates",
				"Opened the startup gate of %d pod(s): the cliques this clique starts after are Ready or done, and no pod of the replica runs an earlier attempt", t.done)
		}
		t := tally[stepCreate]
		if t.done > 0 {
			event(corev1.EventTypeNormal, EventReasonPodsCreated, "CreatePods", "Created %d pod(s)", t.done)
		}
		if !t.started() {
			return nil, events
		}
		var refusal *string
		switch err := t.err(); {
		case err == nil:
		case isRefusal(err):
			message := refusalMessage(err)
			refusal = &message
		default:
			event(corev1.EventTypeWarning, EventReasonPodCreateFailed, "CreatePods", "Created %d of %d pod(s): %v", t.done, t.planned, err)
			return nil, events
		}
		status, changed := statusAfterAttempt(written, o.creation, refusal, o.creation.now)
		if refusal != nil {
			rec := refusalRecordOf(&status)
			event(corev1.EventTypeWarning, EventReasonPodCreationRefused, "CreatePods",
				"Created %d of %d pod(s); the API server refused the rest, retrying at %s: %s", t.done, t.planned,
				refusalRetryAt(rec.since, rec.last).Format(time.RFC3339), *refusal)
		}
		if !changed {
			return nil, events
		}
		settled := written.DeepCopy()
		settled.Status = status
		return settled, events
	}
}

// statusAfterAttempt is the status after a creation attempt: a refusal
// (refusal is the API server's message) sets PodCreationRefused, quoting it
// (refusalCondition), and lastPodCreationRefusalTime; a creation that went
// through after refusals turns the condition False and clears the time.
// PodCreationBlocked follows the new record (decideCreation). changed is
// false when the attempt changes nothing, e.g. a creation with no refusal
// before.
func statusAfterAttempt(pclq *copsev1alpha1.PodClique, state creationState, refusal *string, now time.Time) (status copsev1alpha1.PodCliqueStatus, changed bool) {
	status = *pclq.Status.DeepCopy()
	previous := meta.FindStatusCondition(pclq.Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)
	if cond := refusalCondition(previous, refusal, metav1.NewTime(now)); cond != nil {
		cond.ObservedGeneration = pclq.Generation
		meta.SetStatusCondition(&status.Conditions, *cond)
	}
	status.LastPodCreationRefusalTime = nil
	if refusal != nil {
		status.LastPodCreationRefusalTime = &metav1.MicroTime{Time: now}
	}
	state.refusal, state.now = refusalRecordOf(&status), now
	setCondition(&status, pclq.Generation, creationBlockedCondition(decideCreation(state)), metav1.NewTime(now))
	return status, !equality.Semantic.DeepEqual(status, pclq.Status)
}

// refusalCondition is the PodCreationRefused condition after a creation
// attempt: True quoting the API server's refusal (message), False once pods
// are created again after a refusal. nil means no change: no refusal now and
// none reported before, or the same refusal as reported.
func refusalCondition(previous *metav1.Condition, message *string, now metav1.Time) *metav1.Condition {
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypePodCreationRefused, LastTransitionTime: now}
	switch {
	case message != nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonCreationRefused
		cond.Message = "The API server refuses to create this clique's pods: " + *message
	case previous == nil || previous.Status == metav1.ConditionFalse:
		return nil
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, copsev1alpha1.ReasonCreationAccepted, "Pods are being created again"
	}
	if previous != nil && previous.Status == cond.Status && previous.Message == cond.Message {
		return nil
	}
	return &cond
}

// resultOf is what a pass returns after its writes: a status decided on a
// stale view is decided again soon from fresh data; refused creations wait
// out their back-off, derived from the refusal record as written (a record
// that was lost waits one base period); other failed writes are retried
// with back-off; work the budget or the time bound left is taken up at
// once; otherwise the decision's own requeue.
func resultOf(plan passPlan, out children.Outcome) (ctrl.Result, error) {
	if result, ended, err := out.EndedAtStatus(); ended {
		return result, err
	}
	result := ctrl.Result{RequeueAfter: plan.RequeueAfter}
	if plan.cutShort || out.CutShort || out.PodsLeft > 0 {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: requeue.Soon})
	}
	errs := []error{plan.failure}
	for _, step := range slices.Sorted(maps.Keys(out.Errors)) {
		stepErrs := out.Errors[step]
		if step == stepCreate && isRefusal(errors.Join(stepErrs...)) {
			until := plan.now.Add(refusalBackoffBase)
			if rec := refusalRecordOf(&out.Written.(*copsev1alpha1.PodClique).Status); rec.refused {
				until = refusalRetryAt(rec.since, rec.last)
			}
			result = ctrl.Result{RequeueAfter: max(until.Sub(plan.now), time.Millisecond)}
			continue
		}
		for _, err := range stepErrs {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// causeCounts summarises why pods are deleted, e.g. "ended=1 scale-in=2".
func causeCounts(deletions []podDeletion) string {
	counts := map[deletionCause]int{}
	for _, d := range deletions {
		counts[d.cause]++
	}
	parts := make([]string, 0, len(counts))
	for _, cause := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", cause, counts[cause]))
	}
	return strings.Join(parts, " ")
}
