package podclique

import (
	"context"
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// creationBlocked is the PodClique's PodCreationBlocked condition on the
// API server.
func (h *harness) creationBlocked(t *testing.T) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(h.podClique(t).Status.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked)
}

// TestPodsWaitingForAClaimSayWhy: pods that refer to a ResourceClaim that
// does not exist yet are not created, and the status written before any
// pod is touched says so, naming the claim; once the claim exists the pods
// come and the condition turns False.
func TestPodsWaitingForAClaimSayWhy(t *testing.T) {
	pcs := testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference)
	pcs.Spec.Template.ResourceClaimTemplates = []grovecorev1alpha1.ResourceClaimTemplateConfig{{Name: "gpu"}}
	pcs.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{{
		ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: grovecorev1alpha1.ResourceSharingScopeAllReplicas}}}
	h := newHarness(t, false, pcs, testfixtures.StandaloneClique(2))
	claimName := naming.SharedClaim("llm", "gpu")

	h.reconcile(t, 1)
	if h.server.creates != 0 {
		t.Fatalf("%d pods created before their claim exists", h.server.creates)
	}
	cond := h.creationBlocked(t)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != copsev1alpha1.ReasonWaitingForResourceClaims ||
		!containsAll(cond.Message, claimName) {
		t.Fatalf("PodCreationBlocked = %+v, want True (WaitingForResourceClaims) naming %s", cond, claimName)
	}

	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testfixtures.Namespace, Name: claimName,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pcs, copsev1alpha1.SchemeGroupVersion.WithKind("PodCliqueSet"))}}}
	if err := h.server.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if alive, _ := h.server.pods(t); len(alive) != 2 {
		t.Fatalf("%d pods once the claim exists, want 2", len(alive))
	}
	if cond := h.creationBlocked(t); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != copsev1alpha1.ReasonCreationAllowed {
		t.Errorf("PodCreationBlocked = %+v once the pods are created, want False (CreationAllowed)", cond)
	}
}

// TestStatusSaysWhyTheReplicaGetsNoPods: each answer of
// lifecycle.MayCreatePods that stops the clique's pods is the reason of
// PodCreationBlocked.
func TestStatusSaysWhyTheReplicaGetsNoPods(t *testing.T) {
	cases := []struct {
		name     string
		workload copsev1alpha1.WorkloadType
		change   func(*copsev1alpha1.PodCliqueSet)
		want     lifecycle.Reason
	}{
		{"suspended", copsev1alpha1.WorkloadTypeInference, func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(true) }, lifecycle.ReasonSuspended},
		{"queued in Kueue", copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Suspend = ptr.To(true)
			p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonPending}}
		}, lifecycle.ReasonNotAdmitted},
		{"the workload ended", copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.Phase = copsev1alpha1.PodCliqueSetPhaseFailed
		}, lifecycle.ReasonEnded},
		{"an earlier run of the replica", copsev1alpha1.WorkloadTypeTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 1}}
		}, lifecycle.ReasonSuperseded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := testfixtures.PodCliqueSet(c.workload)
			c.change(pcs)
			h := newHarness(t, false, pcs, testfixtures.StandaloneClique(2))
			h.reconcile(t, 1)
			if h.server.creates != 0 {
				t.Errorf("%d pods created", h.server.creates)
			}
			if cond := h.creationBlocked(t); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != string(c.want) ||
				cond.Message != c.want.Message() {
				t.Errorf("PodCreationBlocked = %+v, want True (%s)", cond, c.want)
			}
		})
	}
}

// TestRefusalBackoffSurvivesARestart: the back-off after a refusal is read
// from the status, so an operator that restarts (a new Reconciler, with no
// memory) does not try again before it ends, and does once it has.
func TestRefusalBackoffSurvivesARestart(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(3))
	attempts := 0
	h.server.WithWatch = interceptor.NewClient(h.server.WithWatch, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				attempts++
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errQuota)
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	// A whole second: conditions keep whole seconds, so the first
	// refusal's condition reads as exactly this time.
	start := time.Now().Truncate(time.Second)
	fake := clocktesting.NewFakePassiveClock(start)
	h.r.Clock = fake
	h.reconcile(t, 1)
	if attempts != 1 {
		t.Fatalf("%d attempts in the first pass, want 1 (slow start)", attempts)
	}

	restarted := func(at time.Time) *Reconciler {
		fake.SetTime(at)
		return &Reconciler{Client: h.cache, APIReader: h.server, Scheme: h.r.Scheme, Recorder: h.recorder,
			Expectations: expectations.New(expectations.Options{}), Decorators: h.r.Decorators, Clock: clock.PassiveClock(fake)}
	}
	h.cache.catchUp(t)
	for _, at := range []time.Time{start.Add(500 * time.Millisecond), start.Add(1500 * time.Millisecond)} {
		if _, err := restarted(at).Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq}); err != nil {
			t.Fatal(err)
		}
		h.cache.catchUp(t)
	}
	if attempts != 2 {
		t.Errorf("%d attempts: want none during the 1s back-off after a restart, and one after it", attempts-1)
	}
	if cond := h.creationBlocked(t); cond == nil || cond.Reason != copsev1alpha1.ReasonCreationRefused {
		t.Errorf("PodCreationBlocked = %+v, want True (Refused)", cond)
	}
}

// TestPodCliqueWithUnreadableLabelsSaysWhy: a PodClique whose labels do not
// say which replica it belongs to gets no pods, the condition says why, and
// a Warning event says so once, when it starts.
func TestPodCliqueWithUnreadableLabelsSaysWhy(t *testing.T) {
	pclq := testfixtures.StandaloneClique(2)
	delete(pclq.Labels, labels.ReplicaKey)
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), pclq)
	h.reconcile(t, 1)
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if h.server.creates != 0 {
		t.Errorf("%d pods created", h.server.creates)
	}
	if cond := h.creationBlocked(t); cond == nil || cond.Reason != copsev1alpha1.ReasonInvalidLabels || !containsAll(cond.Message, labels.ReplicaKey) {
		t.Errorf("PodCreationBlocked = %+v, want InvalidLabels naming %s", cond, labels.ReplicaKey)
	}
	var warnings []string
	for len(h.recorder.Events) > 0 {
		if e := <-h.recorder.Events; strings.HasPrefix(e, "Warning "+EventReasonInvalidPodClique) {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 || !containsAll(warnings[0], labels.ReplicaKey) {
		t.Errorf("events %q, want one %s naming %s", warnings, EventReasonInvalidPodClique, labels.ReplicaKey)
	}
}
