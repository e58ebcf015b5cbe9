package children

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/copse-dev/copse/internal/expectations"
)

// Writer carries out plans against the API server.
type Writer struct {
	Client client.Client
	// Scheme resolves the owner's group, version and kind for owner
	// references.
	Scheme *runtime.Scheme
	// The rest serve Execute. Recorder records the plan's events (nil:
	// none); Written remembers each status write's resourceVersion (nil:
	// nothing); Expectations records the pods created and deleted, under
	// the owner's key (nil: nothing); Budget bounds a pass's object and pod
	// writes (0: DefaultBudget), and OnCut is called once when a pass
	// leaves work for the next (Budget.OnCut).
	Recorder     events.EventRecorder
	Written      *expectations.WrittenVersions
	Expectations *expectations.Store
	Budget       int
	OnCut        func()
}

// Converge plans the writes that make sets' desired objects exist (within
// what is left of budget, PlanWrites) and makes them, owner as the
// controller of what it creates.
func (w Writer) Converge(ctx context.Context, owner client.Object, sets []Set, budget *Budget) error {
	plan := PlanWrites(owner.GetUID(), sets, budget.Remaining())
	budget.spend(len(plan.Writes), plan.CutShort)
	errs := make([]error, 0, len(plan.Writes))
	for _, write := range plan.Writes {
		errs = append(errs, w.apply(ctx, owner, write))
	}
	return errors.Join(errs...)
}

// Delete deletes the objects of kind that are not being deleted yet, as
// many as budget allows, and returns those it deleted (or found gone). It
// is for objects a durable decision names (a replica's old run): unlike
// Converge, it does not ask who controls them.
func (w Writer) Delete(ctx context.Context, kind string, objs []client.Object, budget *Budget) ([]client.Object, error) {
	return w.deleteAll(ctx, Deletion{Kind: kind, Objects: objs}, budget)
}

func (w Writer) deleteAll(ctx context.Context, d Deletion, budget *Budget) ([]client.Object, error) {
	objs := d.Objects
	var live []client.Object
	for _, obj := range objs {
		if obj.GetDeletionTimestamp().IsZero() {
			live = append(live, obj)
		}
	}
	var deleted []client.Object
	var errs []error
	for _, obj := range Cut(budget, live) {
		if err := w.delete(ctx, d.Kind, obj, d.Propagation); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, obj)
	}
	return deleted, errors.Join(errs...)
}

// writeObjects makes a plan's object writes within the budget: the
// deletions a durable decision names, then the sets' creates, updates and
// deletes (PlanWrites); failures are noted under their step.
func (w Writer) writeObjects(ctx context.Context, owner client.Object, plan PassPlan, budget *Budget, out *Outcome) {
	for _, d := range plan.Deletes {
		if _, err := w.deleteAll(ctx, d, budget); err != nil {
			out.note(d.Step, err)
		}
	}
	objects := PlanWrites(owner.GetUID(), plan.Objects, budget.Remaining())
	budget.spend(len(objects.Writes), objects.CutShort)
	for _, write := range objects.Writes {
		if err := w.apply(ctx, owner, write); err != nil {
			out.note(stepOr(write.Step), err)
		}
	}
	for _, own := range plan.OwnWrites {
		if err := own.Write(ctx, w, owner); err != nil {
			out.note(OwnWritesStep, err)
			return
		}
	}
}

func (w Writer) apply(ctx context.Context, owner client.Object, write Write) error {
	obj := write.Object
	switch write.Op {
	case Create:
		obj = obj.DeepCopyObject().(client.Object)
		if err := controllerutil.SetControllerReference(owner, obj, w.Scheme); err != nil {
			return fmt.Errorf("owner reference on %s %s: %w", write.Kind, obj.GetName(), err)
		}
		if err := w.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", write.Kind, obj.GetName(), err)
		}
	case Update:
		// The write carries the resourceVersion read: a change decided on a
		// stale copy fails with a conflict and is made again next pass.
		if err := w.Client.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("update %s %s: %w", write.Kind, obj.GetName(), err)
		}
	case Delete:
		return w.delete(ctx, write.Kind, obj, "")
	}
	return nil
}

// delete deletes obj with its UID as a precondition, so that an object
// made since under the same name is never touched; gone already, or
// replaced (a conflict), is success. Dependents go as propagation says, in
// the background when it is "".
func (w Writer) delete(ctx context.Context, kind string, obj client.Object, propagation metav1.DeletionPropagation) error {
	if propagation == "" {
		propagation = metav1.DeletePropagationBackground
	}
	uid := obj.GetUID()
	err := w.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(propagation))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// stepOr is the step a write's failure is noted under: its own, or
// ObjectsStep for a write that names none.
func stepOr(step string) string {
	if step == "" {
		return ObjectsStep
	}
	return step
}
