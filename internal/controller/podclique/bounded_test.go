package podclique

import (
	"context"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// TestPassesAreBoundedAndReReadTheOwner: one pass creates at most the
// budget and asks to run again at once; the next pass reads the
// PodCliqueSet from the API server first, so a deletion the cache has not
// seen stops pod creation.
func TestPassesAreBoundedAndReReadTheOwner(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(10))
	h.r.WriteBudget = 4
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq})
	if err != nil {
		t.Fatal(err)
	}
	if h.server.creates != 4 || res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Millisecond {
		t.Fatalf("%d creates, requeue %v; want 4 and an immediate requeue", h.server.creates, res.RequeueAfter)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if h.server.creates != 8 {
		t.Fatalf("%d creates after the second pass, want 8", h.server.creates)
	}

	// The PodCliqueSet is deleted; the cache does not know yet.
	if err := h.server.Delete(context.Background(), testfixtures.PodCliqueSet("")); err != nil {
		t.Fatal(err)
	}
	h.reconcile(t, 3)
	if h.server.creates != 8 {
		t.Errorf("%d creates after the PodCliqueSet was deleted, want none beyond 8", h.server.creates)
	}
}
