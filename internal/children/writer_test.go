package children

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
