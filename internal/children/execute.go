package children

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
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
	for _, d := range plan.Deletes {
		if _, err := w.Delete(ctx, d.Kind, d.Objects, budget); err != nil {
			out.note(d.Step, err)
		}
	}
	objects := PlanWrites(written.GetUID(), plan.Objects, budget.Remaining())
	budget.spend(len(objects.Writes), objects.CutShort)
	for _, write := range objects.Writes {
		if err := w.apply(ctx, written, write); err != nil {
			out.note(stepOr(write.Step), err)
		}
	}
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

// writePods starts the plan's pod writes, as many as the budget leaves, in
// one slow-starting burst.
func (w Writer) writePods(ctx context.Context, owner client.Object, plan PassPlan, budget *Budget, out *Outcome) {
	pods := Cut(budget, plan.Pods)
	out.PodDone = make([]bool, len(plan.Pods))
	out.PodErrors = make([]error, len(plan.Pods))
	var stopBy time.Time
	if plan.PodTimeBound {
		stopBy = time.Now().Add(PassTime) // wall time: it bounds work, not a decision
	}
	start := plan.PodStartWindow
	if start <= 0 {
		start = MaxInFlight
	}
	done, _ := InSlowStart(ctx, len(pods), start, MaxInFlight, stopBy, func(ctx context.Context, i int) error {
		err := w.writePod(ctx, owner, pods[i])
		out.PodErrors[i] = err // each index is written by one call only
		out.PodDone[i] = err == nil
		return err
	})
	for i, err := range out.PodErrors {
		if err != nil {
			out.note(stepOr(plan.Pods[i].Step), err)
		}
	}
	failed := 0
	for _, err := range out.PodErrors {
		if err != nil {
			failed++
		}
	}
	out.PodsLeft = len(plan.Pods) - done - failed
}

// writePod makes one pod write.
func (w Writer) writePod(ctx context.Context, owner client.Object, p PodWrite) error {
	ns := owner.GetNamespace()
	switch p.Op {
	case PodDelete:
		var err error
		if p.Release {
			err = DeletePodAndRelease(ctx, w.Client, ns, p.Pod)
		} else {
			err = DeletePod(ctx, w.Client, ns, p.Pod)
		}
		if err == nil {
			w.expectDeletion(owner, p)
		}
		return err
	case PodDeleteNow:
		return DeletePodFromLostNode(ctx, w.Client, ns, p.Pod)
	case PodRelease:
		return ReleasePodOutcome(ctx, w.Client, ns, p.Pod)
	case PodMove:
		drop := make(map[types.UID]bool, len(p.DropOwners))
		for _, uid := range p.DropOwners {
			drop[uid] = true
		}
		return MutatePod(ctx, w.Client, ns, p.Pod, func(pod *corev1.Pod) {
			pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool { return drop[ref.UID] })
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[labels.AttemptKey] = strconv.Itoa(p.Attempt)
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[labels.StartupGateAnnotation] = labels.StartupGateClosed
		})
	case PodAdopt:
		return MutatePod(ctx, w.Client, ns, p.Pod, func(pod *corev1.Pod) {
			pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool {
				return ref.Controller != nil && *ref.Controller
			})
			pod.OwnerReferences = append(pod.OwnerReferences, *p.Owner)
			controllerutil.AddFinalizer(pod, copsev1alpha1.OutcomeFinalizer)
		})
	case PodOpenGate:
		return OpenStartupGate(ctx, w.Client, ns, p.Pod)
	case PodCreate:
		pod := p.New.DeepCopy()
		if err := w.Client.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		if w.Expectations != nil {
			w.Expectations.ExpectCreations(expectations.Key(owner.GetNamespace(), owner.GetName()), pod)
		}
		return nil
	}
	return fmt.Errorf("unknown pod write %q", p.Op)
}

func (w Writer) expectDeletion(owner client.Object, p PodWrite) {
	if w.Expectations == nil {
		return
	}
	w.Expectations.ExpectDeletions(expectations.Key(owner.GetNamespace(), owner.GetName()),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: p.Pod.Name, UID: p.Pod.UID}})
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

func stepOr(step string) string {
	if step == "" {
		return ObjectsStep
	}
	return step
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
