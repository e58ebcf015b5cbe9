package podclique

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// TestExitZeroIsRecordedBeforeThePodMayGo: a Training pod carries the
// outcome finalizer from its creation; once it exited 0 the status records
// its index first, and only then is the finalizer removed. Deleting the pod
// afterwards brings no new pod for the index.
func TestExitZeroIsRecordedBeforeThePodMayGo(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	for _, pod := range alive {
		if !slices.Contains(pod.Finalizers, copsev1alpha1.OutcomeFinalizer) {
			t.Fatalf("pod %s has no outcome finalizer: %v", pod.Name, pod.Finalizers)
		}
	}

	h.setPodStatus(t, 0, exitWith(0))
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if got := h.podClique(t).Status.SucceededIndexes; got != "0" {
		t.Fatalf("succeededIndexes %q, want 0", got)
	}
	pod0 := h.podAt(t, 0)
	if slices.Contains(pod0.Finalizers, copsev1alpha1.OutcomeFinalizer) {
		t.Fatalf("the finalizer of the recorded pod was not released")
	}
	if pod1 := h.podAt(t, 1); !slices.Contains(pod1.Finalizers, copsev1alpha1.OutcomeFinalizer) {
		t.Fatalf("the running pod lost its finalizer")
	}

	if err := h.server.Delete(context.Background(), pod0); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 2)
	if h.server.creates != 2 {
		t.Errorf("%d creates: the index that exited 0 was run again", h.server.creates)
	}
}

// TestInferencePodsCarryNoFinalizer: only Training outcomes are recorded.
func TestInferencePodsCarryNoFinalizer(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	for _, pod := range alive {
		if len(pod.Finalizers) != 0 {
			t.Errorf("pod %s has finalizers %v", pod.Name, pod.Finalizers)
		}
	}
}

// TestOrphanedPodsAreReleased: once the PodClique is gone, its pods must not
// be held by copse's finalizer.
func TestOrphanedPodsAreReleased(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	if err := h.server.Delete(context.Background(), testfixtures.StandaloneClique(2)); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	for _, pod := range alive {
		if slices.Contains(pod.Finalizers, copsev1alpha1.OutcomeFinalizer) {
			t.Errorf("pod %s of a deleted PodClique keeps the finalizer", pod.Name)
		}
	}
}

// TestRefusalIsReportedAndBackedOff: a quota's refusal sets the condition,
// pauses creation (no request until the back-off ends), and clears once a
// pod is created again.
func TestRefusalIsReportedAndBackedOff(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(3))
	refuse := true
	attempts := 0
	h.server.WithWatch = interceptor.NewClient(h.server.WithWatch, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				attempts++
				if refuse {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errQuota)
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq})
	if err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("result %+v, error %v; want a delayed retry and no error", res, err)
	}
	cond := meta.FindStatusCondition(h.podClique(t).Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)
	if cond == nil || cond.Status != "True" || !containsAll(cond.Message, "exceeded quota") {
		t.Fatalf("condition %+v", cond)
	}
	first := attempts
	h.cache.catchUp(t)
	h.reconcile(t, 3)
	if attempts != first {
		t.Errorf("%d more create attempts during the back-off", attempts-first)
	}

	refuse = false
	h.r.history.loosen(h.pclq.Namespace, time.Now()) // the quota changed
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if alive, _ := h.server.pods(t); len(alive) != 3 {
		t.Fatalf("%d pods after the quota was lifted, want 3", len(alive))
	}
	if cond := meta.FindStatusCondition(h.podClique(t).Status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused); cond == nil || cond.Status != "False" {
		t.Errorf("condition after recovery %+v", cond)
	}
}
