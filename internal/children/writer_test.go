package children

import (
	"context"
	"errors"
	"strings"
	"testing"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The writer's I/O on a fake client (a pure unit test; the controllers'
// use of it runs on the real control plane in the e2e suites).
func TestWriter(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ownerObj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: owner}}
	stale := cm("stale", owner, "1", false)
	gone := cm("gone", owner, "1", false)
	refreshed := cm("refreshed", owner, "1", false)
	var deleteOptions []*client.DeleteOptions
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm("taken", other, "1", false), stale, refreshed).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			deleteOptions = append(deleteOptions, o)
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	w := Writer{Client: c, Scheme: scheme}
	existing := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(refreshed), existing); err != nil {
		t.Fatal(err)
	}

	budget := NewBudget(10)
	err := w.Converge(context.Background(), ownerObj, []Set{{
		Kind:     "ConfigMap",
		Desired:  objs(desired("new", "1"), desired("taken", "1"), desired("refreshed", "2")),
		Observed: objs(existing, stale, gone),
		Refresh:  refreshValue,
	}}, budget)
	if err != nil {
		t.Fatalf("converge: %v", err)
	}
	// "taken" is missing from the (stale) observation: its create meets
	// AlreadyExists, which is no error; "gone" is already gone: NotFound.
	if budget.Remaining() != 5 {
		t.Errorf("5 writes (2 creates, 1 update, 2 deletes) leave %d of 10", budget.Remaining())
	}
	made := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "new"}, made); err != nil {
		t.Fatalf("the missing object was not created: %v", err)
	}
	if ref := metav1.GetControllerOf(made); ref == nil || ref.UID != owner {
		t.Errorf("created without the owner as controller: %v", made.OwnerReferences)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(refreshed), made); err != nil || made.Data["v"] != "2" {
		t.Errorf("not refreshed: %v %v", made.Data, err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stale), made); !apierrors.IsNotFound(err) {
		t.Errorf("the unwanted object is still there: %v", err)
	}
	for _, o := range deleteOptions {
		if o.Preconditions == nil || o.Preconditions.UID == nil || o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationBackground {
			t.Errorf("a delete without a UID precondition or background propagation: %+v", o)
		}
	}

	deleted, err := w.Delete(context.Background(), "ConfigMap", objs(cm("absent", other, "", false), cm("going", other, "", true)), NewBudget(1))
	if err != nil || len(deleted) != 1 || deleted[0].GetName() != "absent" {
		t.Errorf("Delete of one gone and one being deleted: deleted %v, err %v", deleted, err)
	}

	failing := Writer{Client: fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errors.New("quota")
		},
	}).Build(), Scheme: scheme}
	if err := failing.Converge(context.Background(), ownerObj, []Set{{Kind: "ConfigMap", Desired: objs(desired("x", "1"))}}, NewBudget(1)); err == nil {
		t.Error("a refused create is not reported")
	}
}

// Execute's order and its refusal to act on a decision that is not durable,
// on a fake client (a pure unit test; the controllers' use of it runs on the
// real control plane in the e2e suites). The owner is a Pod, whose status
// subresource the fake client serves.
func TestExecute(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{labels.AttemptKey: "1"}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	setup := func(funcs interceptor.Funcs) (client.Client, *corev1.Pod, []client.Object) {
		ownerPod := pod("owner", nil)
		doomed := pod("doomed", func(p *corev1.Pod) { p.Finalizers = []string{copsev1alpha1.OutcomeFinalizer} })
		kept := pod("kept", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "old-run", UID: "old-run"}}
		})
		gated := pod("gated", func(p *corev1.Pod) {
			p.Annotations = map[string]string{labels.StartupGateAnnotation: labels.StartupGateClosed}
		})
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ownerPod, doomed, kept, gated).
			WithStatusSubresource(&corev1.Pod{}).WithInterceptorFuncs(funcs).Build()
		read := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(ownerPod), read); err != nil {
			t.Fatal(err)
		}
		return c, read, []client.Object{doomed, kept, gated}
	}
	plan := func(observed *corev1.Pod, pods []client.Object) PassPlan {
		decided := observed.DeepCopy()
		decided.Status.Message = "decided"
		summary := func(i int) podstate.Summary { return podstate.Of(pods[i].(*corev1.Pod)) }
		return PassPlan{
			Observed: observed,
			Status:   decided,
			Events:   []Event{{Type: corev1.EventTypeNormal, Reason: "Decided", Action: "Decide", Message: "the status says so"}},
			Pods: []PodWrite{
				{Op: PodDelete, Step: "old-run", Pod: summary(0), Release: true},
				{Op: PodMove, Step: "old-run", Pod: summary(1), Attempt: 2, DropOwners: []types.UID{"old-run"}},
				{Op: PodOpenGate, Step: "start", Pod: summary(2)},
			},
			Settle: func(written client.Object, out Outcome) (client.Object, []Event) {
				settled := written.(*corev1.Pod).DeepCopy()
				settled.Status.Message = "settled"
				return settled, []Event{{Type: corev1.EventTypeNormal, Reason: "Settled", Action: "Settle", Message: "the writes went through"}}
			},
		}
	}
	get := func(c client.Client, name string) (*corev1.Pod, error) {
		p := &corev1.Pod{}
		return p, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, p)
	}

	t.Run("status, events, pods, settle", func(t *testing.T) {
		c, observed, pods := setup(interceptor.Funcs{})
		recorder := events.NewFakeRecorder(10)
		out := Writer{Client: c, Scheme: scheme, Recorder: recorder}.Execute(context.Background(), plan(observed, pods))
		if out.Conflict || out.Gone || out.Err() != nil || out.CutShort || out.PodsLeft != 0 {
			t.Fatalf("outcome %+v, err %v", out, out.Err())
		}
		if owner, _ := get(c, "owner"); owner.Status.Message != "settled" {
			t.Errorf("owner status %q, want the settled one", owner.Status.Message)
		}
		if _, err := get(c, "doomed"); !apierrors.IsNotFound(err) {
			t.Errorf("the deleted pod is still there (its finalizer not released?): %v", err)
		}
		kept, _ := get(c, "kept")
		if kept.Labels[labels.AttemptKey] != "2" || kept.Annotations[labels.StartupGateAnnotation] != labels.StartupGateClosed || len(kept.OwnerReferences) != 0 {
			t.Errorf("the kept pod was not moved: labels %v annotations %v owners %v", kept.Labels, kept.Annotations, kept.OwnerReferences)
		}
		if gated, _ := get(c, "gated"); gated.Annotations[labels.StartupGateAnnotation] != labels.StartupGateOpen {
			t.Errorf("the gate is %q, want open", gated.Annotations[labels.StartupGateAnnotation])
		}
		var got []string
		for len(recorder.Events) > 0 {
			got = append(got, <-recorder.Events)
		}
		if len(got) != 2 || !strings.Contains(got[0], "Decided") || !strings.Contains(got[1], "Settled") {
			t.Errorf("events %q, want the plan's then settle's", got)
		}
		for i, done := range out.PodDone {
			if !done {
				t.Errorf("pod write %d not reported done", i)
			}
		}
	})

	t.Run("a status decided on a stale owner writes nothing else", func(t *testing.T) {
		c, observed, pods := setup(interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "owner", nil)
		}})
		recorder := events.NewFakeRecorder(10)
		out := Writer{Client: c, Scheme: scheme, Recorder: recorder}.Execute(context.Background(), plan(observed, pods))
		if !out.Conflict || out.Written != nil {
			t.Fatalf("outcome %+v, want a conflict", out)
		}
		if doomed, err := get(c, "doomed"); err != nil || !doomed.DeletionTimestamp.IsZero() {
			t.Errorf("a pod was deleted on a decision that is not durable: %v", err)
		}
		if kept, _ := get(c, "kept"); kept.Labels[labels.AttemptKey] != "1" {
			t.Errorf("a pod was moved on a decision that is not durable")
		}
		if len(recorder.Events) != 0 {
			t.Errorf("%d events recorded for a status that was not written", len(recorder.Events))
		}
	})

	t.Run("the budget leaves pod writes for the next pass", func(t *testing.T) {
		c, observed, pods := setup(interceptor.Funcs{})
		cuts := 0
		out := Writer{Client: c, Scheme: scheme, Budget: 1, OnCut: func() { cuts++ }}.Execute(context.Background(), plan(observed, pods))
		if !out.CutShort || out.PodsLeft != 2 || cuts != 1 || !out.PodDone[0] || out.PodDone[1] {
			t.Errorf("outcome %+v (cuts %d), want the first pod write done and two left", out, cuts)
		}
	})
}
