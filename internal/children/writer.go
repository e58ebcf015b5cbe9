package children

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
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

// The pod writes a plan is carried out with: deleting a pod that was decided
// on, releasing copse's outcome finalizer, patching a pod the cache shows.

// DeletePod deletes the pod that was decided on: the UID precondition makes sure
// a pod created later under the same name is never touched. A pod already
// gone, or replaced, is not an error.
func DeletePod(ctx context.Context, c client.Client, namespace string, pod podstate.Summary) error {
	uid := pod.UID
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name, UID: uid}}
	if err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", namespace, pod.Name, err)
	}
	return nil
}

// ReleasePodOutcome removes copsev1alpha1.OutcomeFinalizer from the pod, and
// only that finalizer (a strategic-merge directive, so finalizers others
// added concurrently stay). The patch names the pod's UID, so it never
// applies to a namesake. A pod without the finalizer is left alone.
func ReleasePodOutcome(ctx context.Context, c client.Client, namespace string, pod podstate.Summary) error {
	if !pod.HasOutcomeFinalizer {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"$deleteFromPrimitiveList/finalizers":[%q]}}`, pod.UID, copsev1alpha1.OutcomeFinalizer)
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name, UID: pod.UID}}
	if err := c.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, []byte(patch))); err != nil &&
		!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("releasing the %s finalizer of pod %s/%s: %w", copsev1alpha1.OutcomeFinalizer, namespace, pod.Name, err)
	}
	return nil
}

// DeletePodAndRelease deletes the pod and releases its outcome finalizer: the
// pod is no longer to be accounted for (its replica restarts, its workload
// failed, it was replaced). The pod still goes through its grace period; the
// finalizer only no longer holds it afterwards.
func DeletePodAndRelease(ctx context.Context, c client.Client, namespace string, pod podstate.Summary) error {
	if !pod.Terminating {
		if err := DeletePod(ctx, c, namespace, pod); err != nil {
			return err
		}
	}
	return ReleasePodOutcome(ctx, c, namespace, pod)
}

// DeletePodFromLostNode deletes a pod whose node is gone at once (grace period
// 0, as the pod garbage collector does): no kubelet is left to stop its
// containers, so a grace period would only keep it terminating. Its
// outcome finalizer is released.
func DeletePodFromLostNode(ctx context.Context, c client.Client, namespace string, pod podstate.Summary) error {
	uid := pod.UID
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name, UID: uid}}
	if err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s/%s of a lost node: %w", namespace, pod.Name, err)
	}
	return ReleasePodOutcome(ctx, c, namespace, pod)
}

// MutatePod changes the pod a summary names, as the cache has it, with
// mutate, and writes the change in one patch with an optimistic lock (the
// cached resourceVersion): a pod gone, replaced by a namesake or changed
// since the cache saw it is left alone, not an error. Its update wakes the
// controllers, whose next pass decides again from what it is now.
func MutatePod(ctx context.Context, c client.Client, namespace string, p podstate.Summary, mutate func(*corev1.Pod)) error {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.UID != p.UID {
		return nil
	}
	orig := pod.DeepCopy()
	mutate(pod)
	err := c.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("patching pod %s/%s: %w", namespace, p.Name, err)
	}
	return nil
}

// OpenStartupGate sets the pod's startup gate open, in a patch that names
// the pod's UID so it never applies to a namesake. The kubelet refreshes the
// gate's downward-API file, and the gate container lets the pod's
// containers start. A pod already gone is not an error.
func OpenStartupGate(ctx context.Context, c client.Client, namespace string, pod podstate.Summary) error {
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, pod.UID, labels.StartupGateAnnotation, labels.StartupGateOpen)
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name}}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("opening the startup gate of pod %s/%s: %w", namespace, pod.Name, err)
	}
	return nil
}

// writePods starts the plan's pod writes, as many as the budget leaves, in
// one slow-starting burst, then records the creations and deletions that
// went through as expectations of the owner (the cache shows them later).
func (w Writer) writePods(ctx context.Context, owner client.Object, plan PassPlan, budget *Budget, out *Outcome) {
	pods := Cut(budget, plan.Pods)
	out.PodDone = make([]bool, len(plan.Pods))
	out.PodErrors = make([]error, len(plan.Pods))
	made := make([]*corev1.Pod, len(plan.Pods))
	var stopBy time.Time
	if plan.PodTimeBound {
		stopBy = time.Now().Add(PassTime) // wall time: it bounds work, not a decision
	}
	start := plan.PodStartWindow
	if start <= 0 {
		start = MaxInFlight
	}
	done, _ := InSlowStart(ctx, len(pods), start, MaxInFlight, stopBy, func(ctx context.Context, i int) error {
		// each index is written by one call only
		made[i], out.PodErrors[i] = w.writePod(ctx, owner.GetNamespace(), pods[i])
		out.PodDone[i] = out.PodErrors[i] == nil
		return out.PodErrors[i]
	})
	failed := 0
	for i, err := range out.PodErrors {
		if err != nil {
			out.note(stepOr(plan.Pods[i].Step), err)
			failed++
		}
	}
	out.PodsLeft = len(plan.Pods) - done - failed
	w.expect(owner, plan.Pods, made, out.PodDone)
}

// writePod makes one pod write; a creation returns the pod as created.
func (w Writer) writePod(ctx context.Context, ns string, p PodWrite) (*corev1.Pod, error) {
	switch p.Op {
	case PodDelete:
		if p.Release {
			return nil, DeletePodAndRelease(ctx, w.Client, ns, p.Pod)
		}
		return nil, DeletePod(ctx, w.Client, ns, p.Pod)
	case PodDeleteNow:
		return nil, DeletePodFromLostNode(ctx, w.Client, ns, p.Pod)
	case PodRelease:
		return nil, ReleasePodOutcome(ctx, w.Client, ns, p.Pod)
	case PodMove:
		drop := make(map[types.UID]bool, len(p.DropOwners))
		for _, uid := range p.DropOwners {
			drop[uid] = true
		}
		return nil, MutatePod(ctx, w.Client, ns, p.Pod, func(pod *corev1.Pod) {
			pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool { return drop[ref.UID] })
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[labels.AttemptKey] = strconv.Itoa(p.Attempt)
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[labels.StartupGateAnnotation] = labels.StartupGateClosed
			pod.Annotations[labels.RestartsAtMoveAnnotation] = strconv.Itoa(int(podstate.ContainerRestarts(pod)))
		})
	case PodAdopt:
		return nil, MutatePod(ctx, w.Client, ns, p.Pod, func(pod *corev1.Pod) {
			pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool {
				return ref.Controller != nil && *ref.Controller
			})
			pod.OwnerReferences = append(pod.OwnerReferences, *p.Owner)
			controllerutil.AddFinalizer(pod, copsev1alpha1.OutcomeFinalizer)
		})
	case PodOpenGate:
		return nil, OpenStartupGate(ctx, w.Client, ns, p.Pod)
	case PodCreate:
		pod := p.New.DeepCopy()
		if err := w.Client.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		return pod, nil
	}
	return nil, fmt.Errorf("unknown pod write %q", p.Op)
}

// expect records the pods created and deleted (with their grace period)
// as the owner's expectations, in one call.
func (w Writer) expect(owner client.Object, writes []PodWrite, made []*corev1.Pod, done []bool) {
	if w.Expectations == nil {
		return
	}
	var created, deleted []metav1.Object
	for i, p := range writes {
		switch {
		case !done[i]:
		case p.Op == PodCreate:
			created = append(created, made[i])
		case p.Op == PodDelete:
			deleted = append(deleted, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: p.Pod.Name, UID: p.Pod.UID}})
		}
	}
	w.Expectations.Expect(expectations.Key(owner.GetNamespace(), owner.GetName()), created, deleted)
}

// Budget bounds the objects one pass writes (creates, updates, deletes,
// pods included), so that a huge workload, or one deleted in the middle,
// never keeps a reconcile busy for long: the rest waits for the next pass,
// which re-reads everything.
type Budget struct {
	remaining int
	cutShort  bool
	onCut     func()
}

// NewBudget is a budget of n writes.
func NewBudget(n int) *Budget { return &Budget{remaining: n} }

// OnCut sets what is called once, the first time the pass leaves work
// for the next one (the operator counts it in a metric).
func (b *Budget) OnCut(f func()) *Budget {
	b.onCut = f
	return b
}

// cut records that some work did not fit.
func (b *Budget) cut() {
	if !b.cutShort && b.onCut != nil {
		b.onCut()
	}
	b.cutShort = true
}

// Take reports whether n more writes fit, and counts them if so.
func (b *Budget) Take(n int) bool {
	if n > b.remaining {
		b.cut()
		return false
	}
	b.remaining -= n
	return true
}

// Remaining is how many writes are left.
func (b *Budget) Remaining() int { return b.remaining }

// Exhausted reports whether some work was left for the next pass.
func (b *Budget) Exhausted() bool { return b.cutShort }

// spend counts n writes a plan made within Remaining, and whether the plan
// left some out.
func (b *Budget) spend(n int, cutShort bool) {
	b.remaining -= n
	if cutShort {
		b.cut()
	}
}

// Cut returns the leading items that fit, counting them.
func Cut[T any](b *Budget, items []T) []T {
	if len(items) > b.remaining {
		b.cut()
		items = items[:b.remaining]
	}
	b.remaining -= len(items)
	return items
}

// MaxInFlight bounds how many pod writes one reconcile has in flight at
// once. The API server's priority and fairness queues the rest of a burst;
// this bound keeps one reconcile from holding more connections than that.
const MaxInFlight = 64

// PassTime is how long one reconcile keeps starting pod writes; what
// remains is for its next pass, which first reads the object and its owners
// again. It bounds how long a deleted workload keeps getting pods.
const PassTime = time.Second

// InSlowStart calls fn for items 0..n-1 in order, with at most a window of
// calls in flight. The window starts at start and doubles each time as many
// calls succeeded as it is wide, up to limit, as a batch of start, 2*start,
// ... would; but a call starts as soon as any in-flight call returns, so one
// slow request (the API server queues some for longer) never holds the
// others back as a batch that waits for its slowest member would.
//
// It starts no call after the first failure, so a systematic failure (a
// quota, an admission webhook refusing pods) costs about a window of calls
// rather than n. Callers start at 1 after a failure and at limit when the
// last run went through, so a healthy burst does not pay the slow start
// every pass. It starts no call after stopBy (zero: no time limit), so that
// a slow API server cannot keep one pass busy for long: the caller sees
// fewer successes than n without an error, and continues in its next pass.
// It returns when every started call has returned: how many succeeded, and
// the failures joined.
func InSlowStart(ctx context.Context, n, start, limit int, stopBy time.Time, fn func(ctx context.Context, item int) error) (succeeded int, err error) {
	s := newSlowStart(start, limit)
	var calls sync.WaitGroup
	for item := range n {
		if !s.admit(stopBy) || ctx.Err() != nil {
			break
		}
		calls.Go(func() { s.done(fn(ctx, item)) })
	}
	calls.Wait()
	return s.succeeded, errors.Join(s.failures...)
}

// slowStart is the window of InSlowStart.
type slowStart struct {
	mu       sync.Mutex
	returned *sync.Cond // signalled when a call returns
	// window is how many calls may be in flight; it doubles after window
	// successes since it last grew, up to limit.
	window, limit int
	inFlight      int
	grownAt       int // succeeded when the window last grew
	succeeded     int
	failures      []error
}

func newSlowStart(start, limit int) *slowStart {
	limit = max(limit, 1)
	s := &slowStart{window: min(max(start, 1), limit), limit: limit}
	s.returned = sync.NewCond(&s.mu)
	return s
}

// admit waits for room in the window and takes it; false means no more
// calls may start (a failure, or past stopBy).
func (s *slowStart) admit(stopBy time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight >= s.window && len(s.failures) == 0 {
		s.returned.Wait()
	}
	if len(s.failures) > 0 || (!stopBy.IsZero() && time.Now().After(stopBy)) {
		return false
	}
	s.inFlight++
	return true
}

// done records a call's result and grows the window.
func (s *slowStart) done(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if err != nil {
		s.failures = append(s.failures, err)
	} else {
		s.succeeded++
		if s.succeeded-s.grownAt >= s.window && s.window < s.limit {
			s.window = min(2*s.window, s.limit)
			s.grownAt = s.succeeded
		}
	}
	s.returned.Broadcast()
}
