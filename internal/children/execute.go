package children

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/expectations"
)

// ObjectsStep is the Step of the object writes whose set names none.
const ObjectsStep = "objects"

// Execute carries out one pass's plan in the order PassPlan describes and
// says what each write did. It is the only place a controller that uses it
// writes its owner's status, events, objects and pods.
func (w Writer) Execute(ctx context.Context, plan PassPlan) Outcome {
	out := Outcome{Errors: map[string][]error{}}
	written, err := w.writeStatus(ctx, plan.Observed, plan.Status)
	switch {
	case apierrors.IsConflict(err):
		out.Conflict = true
		return out
	case apierrors.IsNotFound(err):
		out.Gone = true
		return out
	case err != nil:
		out.note(StatusStep, err)
		return out
	}
	out.Written = written
	w.record(written, plan.Events)
	for _, f := range plan.OnWritten {
		f(written)
	}

	budget := NewBudget(w.budget()).OnCut(w.OnCut)
	w.writeObjects(ctx, written, plan, budget, &out)
	w.writePods(ctx, written, plan, budget, &out)
	out.CutShort = budget.Exhausted()

	if plan.Settle != nil {
		second, events := plan.Settle(written, out)
		w.record(written, events)
		if second != nil {
			if settled, err := w.writeStatus(ctx, written, second); err == nil {
				out.Written = settled
			} else if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				out.note(StatusStep, err)
			}
		}
	}
	return out
}

// record records events on the owner.
func (w Writer) record(owner client.Object, events []Event) {
	if w.Recorder == nil {
		return
	}
	for _, e := range events {
		w.Recorder.Eventf(owner, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}

// writeStatus writes desired's status when it differs from observed's, with
// the resourceVersion observed carries as an optimistic lock: a status
// decided on a stale owner fails with a conflict instead of overwriting a
// newer one. It returns the owner as written; observed itself is left alone.
func (w Writer) writeStatus(ctx context.Context, observed, desired client.Object) (client.Object, error) {
	if desired == nil || apiequality.Semantic.DeepEqual(observed, desired) {
		return observed.DeepCopyObject().(client.Object), nil
	}
	updated := desired.DeepCopyObject().(client.Object)
	patch := client.MergeFromWithOptions(observed, client.MergeFromWithOptimisticLock{})
	if err := w.Client.Status().Patch(ctx, updated, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("write status of %s/%s: %w", observed.GetNamespace(), observed.GetName(), err)
	}
	if w.Written != nil {
		w.Written.Wrote(expectations.Key(updated.GetNamespace(), updated.GetName()), updated)
	}
	return updated, nil
}

func (w Writer) budget() int {
	if w.Budget > 0 {
		return w.Budget
	}
	return DefaultBudget
}

// DefaultBudget is the write budget of a Writer that names none.
const DefaultBudget = 1000

func (o *Outcome) note(step string, err error) {
	o.Errors[step] = append(o.Errors[step], err)
}

// joinSteps joins errors by step, each wrapped with its step's name, in a
// stable order.
func joinSteps(byStep map[string][]error) error {
	steps := make([]string, 0, len(byStep))
	for step := range byStep {
		steps = append(steps, step)
	}
	slices.Sort(steps)
	var errs []error
	for _, step := range steps {
		for _, err := range byStep[step] {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	return errors.Join(errs...)
}
