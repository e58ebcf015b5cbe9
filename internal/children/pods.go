package children

// The pod writes a plan is carried out with: deleting a pod that was decided
// on, releasing copse's outcome finalizer, patching a pod the cache shows.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

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
