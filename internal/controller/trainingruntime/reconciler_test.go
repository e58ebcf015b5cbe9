package trainingruntime

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The reconciler's only decision is whether a runtime being deleted may go;
// it is tested on controller-runtime's fake client, which serves the
// TrainJob index the manager would.

var deletedAt = metav1.Now()

func runtimeMeta(namespace, name string, deleting bool, finalizers ...string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: namespace, Name: name, Finalizers: finalizers}
	if deleting {
		m.DeletionTimestamp = &deletedAt
	}
	return m
}

func namespaced(namespace, name string, deleting bool, finalizers ...string) *trainerv1alpha1.TrainingRuntime {
	return &trainerv1alpha1.TrainingRuntime{ObjectMeta: runtimeMeta(namespace, name, deleting, finalizers...)}
}

func clusterWide(name string, deleting bool, finalizers ...string) *trainerv1alpha1.ClusterTrainingRuntime {
	return &trainerv1alpha1.ClusterTrainingRuntime{ObjectMeta: runtimeMeta("", name, deleting, finalizers...)}
}

// trainJob names a runtime of kind ("" leaves the kind unset: a
// ClusterTrainingRuntime); conditions are the TrainJob's true conditions.
func trainJob(namespace, name, kind, runtime string, conditions ...string) *trainerv1alpha1.TrainJob {
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	tj.Spec.RuntimeRef.Name = runtime
	if kind != "" {
		tj.Spec.RuntimeRef.Kind = ptr.To(kind)
	}
	for _, c := range conditions {
		tj.Status.Conditions = append(tj.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c})
	}
	return tj
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := trainerv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

const inUse = trainjob.RuntimeInUseFinalizer

func TestReconcile(t *testing.T) {
	tests := []struct {
		name    string
		runtime client.Object
		others  []client.Object
		// released: the in-use finalizer is gone (the fake client then
		// completes the deletion); otherwise the runtime's finalizers are
		// as they were.
		released bool
	}{
		{
			name:     "a TrainingRuntime being deleted that no TrainJob names is released",
			runtime:  namespaced("ml", "torch", true, inUse),
			released: true,
		},
		{
			name:    "an unfinished TrainJob keeps its TrainingRuntime",
			runtime: namespaced("ml", "torch", true, inUse),
			others:  []client.Object{trainJob("ml", "job", trainerv1alpha1.TrainingRuntimeKind, "torch")},
		},
		{
			name:    "a TrainJob whose Complete condition is not True still needs its runtime",
			runtime: namespaced("ml", "torch", true, inUse),
			others: []client.Object{func() client.Object {
				tj := trainJob("ml", "job", trainerv1alpha1.TrainingRuntimeKind, "torch")
				tj.Status.Conditions = []metav1.Condition{{Type: trainerv1alpha1.TrainJobComplete, Status: metav1.ConditionFalse, Reason: "Running"}}
				return tj
			}()},
		},
		{
			name:    "finished TrainJobs (complete or failed) do not keep it",
			runtime: namespaced("ml", "torch", true, inUse),
			others: []client.Object{
				trainJob("ml", "done", trainerv1alpha1.TrainingRuntimeKind, "torch", trainerv1alpha1.TrainJobComplete),
				trainJob("ml", "broken", trainerv1alpha1.TrainingRuntimeKind, "torch", trainerv1alpha1.TrainJobFailed),
			},
			released: true,
		},
		{
			name:    "one unfinished user among finished ones keeps it",
			runtime: namespaced("ml", "torch", true, inUse),
			others: []client.Object{
				trainJob("ml", "done", trainerv1alpha1.TrainingRuntimeKind, "torch", trainerv1alpha1.TrainJobComplete),
				trainJob("ml", "running", trainerv1alpha1.TrainingRuntimeKind, "torch"),
			},
		},
		{
			name:    "TrainJobs of another namespace, of another runtime, or naming the ClusterTrainingRuntime of that name do not keep it",
			runtime: namespaced("ml", "torch", true, inUse),
			others: []client.Object{
				trainJob("other", "job", trainerv1alpha1.TrainingRuntimeKind, "torch"),
				trainJob("ml", "job-2", trainerv1alpha1.TrainingRuntimeKind, "jax"),
				trainJob("ml", "job-3", "", "torch"),
			},
			released: true,
		},
		{
			name:    "a ClusterTrainingRuntime is kept by an unfinished TrainJob of any namespace (the kind defaults to it)",
			runtime: clusterWide("torch", true, inUse),
			others:  []client.Object{trainJob("team-b", "job", "", "torch")},
		},
		{
			name:    "a ClusterTrainingRuntime named explicitly is kept",
			runtime: clusterWide("torch", true, inUse),
			others:  []client.Object{trainJob("team-b", "job", trainerv1alpha1.ClusterTrainingRuntimeKind, "torch")},
		},
		{
			name:     "a TrainJob naming a TrainingRuntime of the same name does not keep the ClusterTrainingRuntime",
			runtime:  clusterWide("torch", true, inUse),
			others:   []client.Object{trainJob("team-b", "job", trainerv1alpha1.TrainingRuntimeKind, "torch")},
			released: true,
		},
		{
			name:    "a runtime that is not being deleted keeps its finalizer",
			runtime: namespaced("ml", "torch", false, inUse),
		},
		{
			name:    "a runtime being deleted without the in-use finalizer is left to others",
			runtime: namespaced("ml", "torch", true, "example.com/other"),
		},
		{
			name:     "only the in-use finalizer is removed",
			runtime:  clusterWide("torch", true, "example.com/other", inUse),
			released: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updates := 0
			c := fake.NewClientBuilder().WithScheme(scheme(t)).
				WithObjects(append([]client.Object{tt.runtime}, tt.others...)...).
				WithIndex(&trainerv1alpha1.TrainJob{}, runtimeRefIndex, runtimeRefOf).
				WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					updates++
					return c.Update(ctx, obj, opts...)
				}}).
				Build()
			r := &Reconciler{Client: c}
			key := client.ObjectKeyFromObject(tt.runtime)
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			after := tt.runtime.DeepCopyObject().(client.Object)
			err := c.Get(context.Background(), key, after)
			gone := apierrors.IsNotFound(err)
			if err != nil && !gone {
				t.Fatal(err)
			}
			want := tt.runtime.GetFinalizers()
			if tt.released {
				want = slices.DeleteFunc(slices.Clone(want), func(f string) bool { return f == inUse })
			}
			if wantUpdates := map[bool]int{true: 1, false: 0}[tt.released]; updates != wantUpdates {
				t.Errorf("%d updates, want %d: a runtime that stays is not written", updates, wantUpdates)
			}
			switch {
			case gone && (!tt.released || len(want) > 0):
				t.Fatalf("the runtime is gone; want finalizers %v", want)
			case !gone && !slices.Equal(after.GetFinalizers(), want):
				t.Fatalf("finalizers %v, want %v", after.GetFinalizers(), want)
			}
		})
	}
}

func TestReconcileMissingRuntime(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithIndex(&trainerv1alpha1.TrainJob{}, runtimeRefIndex, runtimeRefOf).Build()
	r := &Reconciler{Client: c}
	for _, key := range []client.ObjectKey{{Namespace: "ml", Name: "gone"}, {Name: "gone"}} {
		if res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil || res != (ctrl.Result{}) {
			t.Errorf("Reconcile(%v) = %+v, %v; want nothing to do", key, res, err)
		}
	}
}

// TestRuntimeRefOfAndRuntimeOf: the index key of a TrainJob is the key the
// reconciler lists by for its runtime, and a TrainJob's event maps to that
// runtime's request (no namespace for a ClusterTrainingRuntime).
func TestRuntimeRefOfAndRuntimeOf(t *testing.T) {
	tests := []struct {
		name        string
		tj          *trainerv1alpha1.TrainJob
		wantKey     string
		wantRequest client.ObjectKey
	}{
		{
			name:        "a TrainingRuntime in the TrainJob's namespace",
			tj:          trainJob("ml", "job", trainerv1alpha1.TrainingRuntimeKind, "torch"),
			wantKey:     "TrainingRuntime/ml/torch",
			wantRequest: client.ObjectKey{Namespace: "ml", Name: "torch"},
		},
		{
			name:        "no kind: a ClusterTrainingRuntime",
			tj:          trainJob("ml", "job", "", "torch"),
			wantKey:     "ClusterTrainingRuntime//torch",
			wantRequest: client.ObjectKey{Name: "torch"},
		},
		{
			name:        "a ClusterTrainingRuntime named explicitly",
			tj:          trainJob("ml", "job", trainerv1alpha1.ClusterTrainingRuntimeKind, "torch"),
			wantKey:     "ClusterTrainingRuntime//torch",
			wantRequest: client.ObjectKey{Name: "torch"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runtimeRefOf(tt.tj); !slices.Equal(got, []string{tt.wantKey}) {
				t.Errorf("runtimeRefOf = %v, want [%s]", got, tt.wantKey)
			}
			got := runtimeOf(context.Background(), tt.tj)
			if want := []reconcile.Request{{NamespacedName: tt.wantRequest}}; !slices.Equal(got, want) {
				t.Errorf("runtimeOf = %v, want %v", got, want)
			}
		})
	}
	if got := runtimeOf(context.Background(), clusterWide("torch", false)); got != nil {
		t.Errorf("runtimeOf a runtime = %v, want nothing", got)
	}
}
