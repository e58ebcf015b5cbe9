package kueueworkload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// The controller's decisions are kueue.Decide's, tested in internal/kueue;
// these tests check what the reconciler feeds it (the objects it gathers)
// and that it takes the step it is given, on controller-runtime's fake
// client. They read the Workload and the PodCliqueSet's spec, not its
// status.

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	queueName  = "team-a"
	flavorName = "gpu-a"
	flavorKey  = "example.com/pool"
)

// queuedPCS is testfixtures' PodCliqueSet "llm" as the webhook admits it to
// LocalQueue team-a: suspended, every container requesting a CPU.
func queuedPCS() *copsev1alpha1.PodCliqueSet {
	pcs := testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining)
	pcs.Labels = map[string]string{kueue.QueueNameLabel: queueName}
	pcs.Spec.Suspend = ptr.To(true)
	for _, clique := range pcs.Spec.Template.Cliques {
		clique.Spec.PodSpec.Containers = []corev1.Container{{Name: "main", Image: "train:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}
	}
	return pcs
}

func running(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs.Spec.Suspend = ptr.To(false)
	return pcs
}

// workloadOf is the Workload the controller creates for pcs.
func workloadOf(pcs *copsev1alpha1.PodCliqueSet) *kueuev1beta2.Workload {
	podSets, err := kueue.PodSets(pcs, nil, 0)
	if err != nil {
		panic(err)
	}
	wl := kueue.BuildWorkload(pcs, podSets, kueue.Priority{})
	wl.UID = "wl-uid"
	return wl
}

func setCondition(wl *kueuev1beta2.Workload, conditionType string, status metav1.ConditionStatus, reason string) {
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: conditionType, Status: status, Reason: reason,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))})
}

// admitted is wl admitted to flavorName for every resource, PodsReady as a
// fresh admission has it.
func admitted(wl *kueuev1beta2.Workload) *kueuev1beta2.Workload {
	setCondition(wl, kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved")
	setCondition(wl, kueuev1beta2.WorkloadAdmitted, metav1.ConditionTrue, "Admitted")
	setCondition(wl, kueuev1beta2.WorkloadPodsReady, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)
	wl.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "cluster-gpu"}
	for _, podSet := range wl.Spec.PodSets {
		wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments, kueuev1beta2.PodSetAssignment{
			Name: podSet.Name, Count: ptr.To(podSet.Count),
			Flavors: map[corev1.ResourceName]kueuev1beta2.ResourceFlavorReference{corev1.ResourceCPU: flavorName},
		})
	}
	return wl
}

func flavor() *kueuev1beta2.ResourceFlavor {
	return &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavorName},
		Spec: kueuev1beta2.ResourceFlavorSpec{NodeLabels: map[string]string{flavorKey: "a"}}}
}

// controlledBy makes wl controlled by a PodCliqueSet named pcsName with uid.
func controlledBy(wl *kueuev1beta2.Workload, kind, pcsName string, uid types.UID) *kueuev1beta2.Workload {
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: kind,
		Name: pcsName, UID: uid, Controller: ptr.To(true)}}
	return wl
}

// pod is a pod of PodCliqueSet llm in phase.
func pod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testfixtures.Namespace, Name: name, Labels: labels.ForReplica("llm", 0)},
		Status: corev1.PodStatus{Phase: phase}}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, copsev1alpha1.AddToScheme, kueuev1beta2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// env is a reconciler on a fake API server holding objs; funcs, if set,
// intercept its calls.
type env struct {
	r        *Reconciler
	c        client.Client
	recorder *events.FakeRecorder
}

func newEnv(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) env {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithStatusSubresource(&copsev1alpha1.PodCliqueSet{}, &kueuev1beta2.Workload{}).
		WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	recorder := events.NewFakeRecorder(10)
	return env{
		r:        &Reconciler{Client: c, Scheme: c.Scheme(), Recorder: recorder, Clock: clocktesting.NewFakePassiveClock(now)},
		c:        c,
		recorder: recorder,
	}
}

func (e env) workload(t *testing.T) *kueuev1beta2.Workload {
	t.Helper()
	wl := &kueuev1beta2.Workload{}
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: testfixtures.Namespace, Name: kueue.WorkloadName("llm")}, wl)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

func (e env) podCliqueSet(t *testing.T) *copsev1alpha1.PodCliqueSet {
	t.Helper()
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: testfixtures.Namespace, Name: "llm"}, pcs); err != nil {
		t.Fatal(err)
	}
	return pcs
}

func (e env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

var request = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: testfixtures.Namespace, Name: "llm"}}

// TestReconcileGathers: each input the reconciler reads (the Workload of
// the name and its controller, the pods, startTime, the priority classes,
// the admission's ResourceFlavors, the packing) reaches the decision.
func TestReconcileGathers(t *testing.T) {
	tests := []struct {
		name  string
		objs  []client.Object
		tas   bool
		check func(t *testing.T, e env, res ctrl.Result)
	}{
		{
			name: "a queued PodCliqueSet without a Workload gets one, held by Kueue's finalizer",
			objs: []client.Object{queuedPCS()},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				wl := e.workload(t)
				if wl == nil {
					t.Fatal("no Workload was created")
				}
				if !metav1.IsControlledBy(wl, queuedPCS()) || string(wl.Spec.QueueName) != queueName ||
					!slices.Contains(wl.Finalizers, kueuev1beta2.ResourceInUseFinalizerName) || len(wl.Spec.PodSets) != 3 {
					t.Errorf("Workload owners %v, queue %q, finalizers %v, %d pod sets; want it controlled by llm, in %s, held by %s, 3 pod sets",
						wl.OwnerReferences, wl.Spec.QueueName, wl.Finalizers, len(wl.Spec.PodSets), queueName, kueuev1beta2.ResourceInUseFinalizerName)
				}
			},
		},
		{
			name:  "a pod of the previous run that holds its node keeps the Workload back",
			objs:  []client.Object{queuedPCS(), pod("llm-0-leader-0", corev1.PodSucceeded), pod("llm-0-worker-0", corev1.PodRunning)},
			check: wantNoWorkload,
		},
		{
			name: "pods that ended do not",
			objs: []client.Object{queuedPCS(), pod("llm-0-leader-0", corev1.PodSucceeded), pod("llm-0-worker-0", corev1.PodFailed)},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				if e.workload(t) == nil {
					t.Fatal("no Workload was created")
				}
			},
		},
		{
			name: "pods of another PodCliqueSet do not",
			objs: []client.Object{queuedPCS(), func() client.Object {
				p := pod("other-0-worker-0", corev1.PodRunning)
				p.Labels = labels.ForReplica("other", 0)
				return p
			}()},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				if e.workload(t) == nil {
					t.Fatal("no Workload was created")
				}
			},
		},
		{
			name: "status.startTime still set (the suspension is not over) keeps the Workload back",
			objs: []client.Object{func() client.Object {
				pcs := queuedPCS()
				pcs.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
				return pcs
			}()},
			check: wantNoWorkload,
		},
		{
			name: "a WorkloadPriorityClass that does not exist: no Workload, retried",
			objs: []client.Object{withLabel(queuedPCS(), kueue.PriorityClassLabel, "urgent")},
			check: func(t *testing.T, e env, res ctrl.Result) {
				wantNoWorkload(t, e, res)
				if res.RequeueAfter <= 0 {
					t.Errorf("result %+v, want a retry", res)
				}
			},
		},
		{
			name: "the WorkloadPriorityClass of the label gives the priority",
			objs: []client.Object{withLabel(queuedPCS(), kueue.PriorityClassLabel, "urgent"),
				&kueuev1beta2.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent"}, Value: 500}},
			check: wantPriority("urgent", 500),
		},
		{
			name: "else the PriorityClass of the pods",
			objs: []client.Object{func() client.Object {
				pcs := queuedPCS()
				pcs.Spec.Template.PriorityClassName = "high"
				return pcs
			}(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
				&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Value: 7, GlobalDefault: true}},
			check: wantPriority("high", 1000),
		},
		{
			name:  "else the global default PriorityClass",
			objs:  []client.Object{queuedPCS(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Value: 7, GlobalDefault: true}},
			check: wantPriority("default", 7),
		},
		{
			name: "an admitted Workload starts the PodCliqueSet on its flavor's nodes",
			objs: []client.Object{queuedPCS(), admitted(workloadOf(queuedPCS())), flavor()},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				pcs := e.podCliqueSet(t)
				if pcs.IsSuspended() {
					t.Fatal("the PodCliqueSet was not started")
				}
				for _, clique := range pcs.Spec.Template.Cliques {
					if clique.Spec.PodSpec.NodeSelector[flavorKey] != "a" {
						t.Errorf("clique %s: nodeSelector %v, want the flavor's %s=a", clique.Name, clique.Spec.PodSpec.NodeSelector, flavorKey)
					}
				}
			},
		},
		{
			name: "an admission whose ResourceFlavor is not there yet: not started, retried",
			objs: []client.Object{queuedPCS(), admitted(workloadOf(queuedPCS()))},
			check: func(t *testing.T, e env, res ctrl.Result) {
				if !e.podCliqueSet(t).IsSuspended() || res.RequeueAfter <= 0 {
					t.Errorf("suspended %v, result %+v; want suspended and a retry", e.podCliqueSet(t).IsSuspended(), res)
				}
			},
		},
		{
			name: "the Workload of an earlier PodCliqueSet of the same name is released",
			objs: []client.Object{queuedPCS(), controlledBy(workloadOf(queuedPCS()), "PodCliqueSet", "llm", "earlier-uid")},
			check: func(t *testing.T, e env, res ctrl.Result) {
				if wl := e.workload(t); wl == nil || len(wl.Finalizers) != 0 {
					t.Errorf("Workload %v, want it there without Kueue's finalizer", finalizersOf(wl))
				}
				if res.RequeueAfter <= 0 {
					t.Errorf("result %+v, want a retry until the name is free", res)
				}
			},
		},
		{
			name: "a Workload of the name another kind of object controls stops a running PodCliqueSet",
			objs: []client.Object{running(queuedPCS()), controlledBy(workloadOf(queuedPCS()), "JobSet", "llm", "jobset-uid")},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				if !e.podCliqueSet(t).IsSuspended() {
					t.Error("the PodCliqueSet was not stopped")
				}
				if wl := e.workload(t); wl == nil || len(wl.Finalizers) == 0 {
					t.Errorf("Workload %v, want the other object's Workload untouched", finalizersOf(wl))
				}
			},
		},
		{
			name: "topology-aware scheduling: the pod sets carry the packing of the binding's level",
			objs: []client.Object{withPacking(queuedPCS(), "fleet"), binding()},
			tas:  true,
			check: func(t *testing.T, e env, _ ctrl.Result) {
				wl := e.workload(t)
				if wl == nil {
					t.Fatal("no Workload was created")
				}
				for _, ps := range wl.Spec.PodSets {
					if ps.Name == "leader" {
						continue // One pod per PodClique: nothing to pack.
					}
					if r := ps.TopologyRequest; r == nil || ptr.Deref(r.Required, "") != "example.com/rack" &&
						ptr.Deref(r.PodSetSliceRequiredTopology, "") != "example.com/rack" {
						t.Errorf("pod set %s: topology request %+v, want one that packs on example.com/rack", ps.Name, r)
					}
				}
			},
		},
		{
			name: "topology-aware scheduling off: no topology request",
			objs: []client.Object{withPacking(queuedPCS(), "fleet"), binding()},
			check: func(t *testing.T, e env, _ ctrl.Result) {
				wl := e.workload(t)
				if wl == nil {
					t.Fatal("no Workload was created")
				}
				for _, ps := range wl.Spec.PodSets {
					if ps.TopologyRequest != nil {
						t.Errorf("pod set %s: topology request %v, want none", ps.Name, ps.TopologyRequest)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, tt.objs...)
			e.r.TopologyAwareScheduling = tt.tas
			res, err := e.r.Reconcile(context.Background(), request)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			tt.check(t, e, res)
		})
	}
}

// TestReconcileWithoutPodCliqueSet: a request for a PodCliqueSet that is
// gone releases the Workload it controlled, and nothing else.
func TestReconcileWithoutPodCliqueSet(t *testing.T) {
	e := newEnv(t, nil, workloadOf(queuedPCS()))
	res, err := e.r.Reconcile(context.Background(), request)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if wl := e.workload(t); wl == nil || len(wl.Finalizers) != 0 {
		t.Errorf("Workload %v, want it there without Kueue's finalizer", finalizersOf(wl))
	}
	if res != (ctrl.Result{}) {
		t.Errorf("result %+v, want none", res)
	}
	e = newEnv(t, nil)
	if res, err := e.r.Reconcile(context.Background(), request); err != nil || res != (ctrl.Result{}) {
		t.Errorf("nothing at all: %+v, %v; want nothing to do", res, err)
	}
}

// TestReconcileCreateFailures: a Workload the API server refuses is retried
// after refusedRetry with a warning event; one that meets an existing
// Workload is retried at once; any other failure is returned.
func TestReconcileCreateFailures(t *testing.T) {
	gk := schema.GroupKind{Group: kueuev1beta2.SchemeGroupVersion.Group, Kind: "Workload"}
	tests := []struct {
		name      string
		err       error
		wantRetry time.Duration
		wantErr   bool
		wantEvent string
	}{
		{
			name: "refused by a webhook", wantRetry: refusedRetry, wantEvent: kueue.EventWorkloadRefused,
			err: apierrors.NewInvalid(gk, "podcliqueset-llm", field.ErrorList{field.Invalid(field.NewPath("spec", "queueName"), queueName, "no such queue")}),
		},
		{
			name: "forbidden by a quota", wantRetry: refusedRetry, wantEvent: kueue.EventWorkloadRefused,
			err: apierrors.NewForbidden(schema.GroupResource{Group: gk.Group, Resource: "workloads"}, "podcliqueset-llm", errors.New("exceeded quota")),
		},
		{name: "already exists", wantRetry: requeue.AfterConflict, err: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "workloads"}, "podcliqueset-llm")},
		{name: "the API server failed", wantErr: true, err: apierrors.NewInternalError(errors.New("etcd is down"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*kueuev1beta2.Workload); ok {
					return tt.err
				}
				return c.Create(ctx, obj, opts...)
			}}, queuedPCS())
			res, err := e.r.Reconcile(context.Background(), request)
			if (err != nil) != tt.wantErr || res.RequeueAfter != tt.wantRetry {
				t.Fatalf("Reconcile = %+v, %v; want a retry after %s, error %v", res, err, tt.wantRetry, tt.wantErr)
			}
			got := e.events()
			if tt.wantEvent == "" && len(got) > 0 || tt.wantEvent != "" && (len(got) != 1 || !strings.Contains(got[0], tt.wantEvent)) {
				t.Errorf("events %q, want %q", got, tt.wantEvent)
			}
		})
	}
}

// TestApply: each step is written to the object it names, carrying the
// resourceVersion it was decided on; a refusal of the Workload is reported
// as such, not as a failure.
func TestApply(t *testing.T) {
	ctx := context.Background()
	stale := func(obj client.Object) client.Object { obj.SetResourceVersion("1"); return obj }
	tests := []struct {
		name string
		objs []client.Object
		// decision builds the step from the stored objects.
		decision func(e env) kueue.Decision
		funcs    *interceptor.Funcs
		wantErr  func(error) bool
		refused  bool
		check    func(t *testing.T, e env)
	}{
		{
			name:     "None writes nothing",
			objs:     []client.Object{queuedPCS()},
			decision: func(env) kueue.Decision { return kueue.Decision{} },
		},
		{
			name: "Start updates the PodCliqueSet",
			objs: []client.Object{queuedPCS()},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepStart, PodCliqueSet: running(e.podCliqueSet(t))}
			},
			check: func(t *testing.T, e env) {
				if e.podCliqueSet(t).IsSuspended() {
					t.Error("not started")
				}
			},
		},
		{
			name: "Stop on a stale PodCliqueSet is a conflict",
			objs: []client.Object{running(queuedPCS())},
			decision: func(e env) kueue.Decision {
				pcs := e.podCliqueSet(t)
				pcs.Spec.Suspend = ptr.To(true)
				return kueue.Decision{Step: kueue.StepStop, PodCliqueSet: stale(pcs).(*copsev1alpha1.PodCliqueSet)}
			},
			wantErr: apierrors.IsConflict,
			check: func(t *testing.T, e env) {
				if e.podCliqueSet(t).IsSuspended() {
					t.Error("a stale decision was written")
				}
			},
		},
		{
			name: "CreateWorkload creates it",
			objs: []client.Object{queuedPCS()},
			decision: func(env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepCreateWorkload, Workload: workloadOf(queuedPCS())}
			},
			check: func(t *testing.T, e env) {
				if e.workload(t) == nil {
					t.Error("not created")
				}
			},
		},
		{
			name: "CreateWorkload refused by the API server is a refusal",
			objs: []client.Object{queuedPCS()},
			decision: func(env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepCreateWorkload, Workload: workloadOf(queuedPCS())}
			},
			funcs: &interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewBadRequest("spec.podSets: too many")
			}},
			refused: true,
		},
		{
			name: "CreateWorkload over an existing one fails",
			objs: []client.Object{queuedPCS(), workloadOf(queuedPCS())},
			decision: func(env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepCreateWorkload, Workload: workloadOf(queuedPCS())}
			},
			wantErr: apierrors.IsAlreadyExists,
		},
		{
			name: "DeleteWorkload deletes it",
			objs: []client.Object{queuedPCS(), withoutFinalizers(workloadOf(queuedPCS()))},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepDeleteWorkload, Workload: e.workload(t)}
			},
			check: func(t *testing.T, e env) {
				if e.workload(t) != nil {
					t.Error("not deleted")
				}
			},
		},
		{
			name: "DeleteWorkload of a Workload already gone is done",
			objs: []client.Object{queuedPCS()},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepDeleteWorkload, Workload: workloadOf(queuedPCS())}
			},
		},
		{
			name: "RemoveFinalizer updates the Workload's metadata",
			objs: []client.Object{queuedPCS(), workloadOf(queuedPCS())},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepRemoveFinalizer, Workload: withoutFinalizers(e.workload(t))}
			},
			check: func(t *testing.T, e env) {
				if wl := e.workload(t); wl == nil || len(wl.Finalizers) != 0 {
					t.Errorf("Workload %v, want it there without finalizers", finalizersOf(wl))
				}
			},
		},
		{
			name: "RemoveFinalizer of a Workload already gone is done",
			objs: []client.Object{queuedPCS()},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepRemoveFinalizer, Workload: withoutFinalizers(workloadOf(queuedPCS()))}
			},
		},
		{
			name: "FinishWorkload writes the Workload's status",
			objs: []client.Object{queuedPCS(), workloadOf(queuedPCS())},
			decision: func(e env) kueue.Decision {
				return kueue.Decision{Step: kueue.StepFinishWorkload, Workload: kueue.Finish(e.workload(t), "Succeeded", "done", now)}
			},
			check: func(t *testing.T, e env) {
				if wl := e.workload(t); wl == nil || !kueue.IsFinished(wl) {
					t.Error("the Workload is not finished")
				}
			},
		},
		{
			name: "SetPodsReady on a stale Workload is a conflict",
			objs: []client.Object{queuedPCS(), workloadOf(queuedPCS())},
			decision: func(e env) kueue.Decision {
				wl := stale(e.workload(t)).(*kueuev1beta2.Workload)
				setCondition(wl, kueuev1beta2.WorkloadPodsReady, metav1.ConditionTrue, kueuev1beta2.WorkloadStarted)
				return kueue.Decision{Step: kueue.StepSetPodsReady, Workload: wl}
			},
			wantErr: apierrors.IsConflict,
		},
		{
			name:     "an unknown step is an error",
			objs:     []client.Object{queuedPCS()},
			decision: func(env) kueue.Decision { return kueue.Decision{Step: "Dance"} },
			wantErr:  func(err error) bool { return err != nil },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.funcs, tt.objs...)
			pcs := e.podCliqueSet(t)
			d := tt.decision(e)
			written, refusal, err := e.r.apply(ctx, pcs, d)
			switch {
			case tt.wantErr != nil:
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("apply: error %v, want one of the expected kind", err)
				}
			case err != nil:
				t.Fatalf("apply: %v", err)
			case (refusal != nil) != tt.refused:
				t.Fatalf("refusal %v, want refused %v", refusal, tt.refused)
			case written == nil:
				t.Fatal("no PodCliqueSet to write the outcome on")
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

func TestRefusedByAPIServer(t *testing.T) {
	gr := schema.GroupResource{Group: kueuev1beta2.SchemeGroupVersion.Group, Resource: "workloads"}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Workload"}, "wl", nil), true},
		{apierrors.NewForbidden(gr, "wl", errors.New("quota")), true},
		{apierrors.NewBadRequest("bad"), true},
		{apierrors.NewConflict(gr, "wl", errors.New("stale")), false},
		{apierrors.NewAlreadyExists(gr, "wl"), false},
		{apierrors.NewInternalError(errors.New("etcd")), false},
		{apierrors.NewTimeoutError("slow", 1), false},
		{errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		if got := refusedByAPIServer(tt.err); got != tt.want {
			t.Errorf("refusedByAPIServer(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestQueued: the controller follows PodCliqueSets in a queue, those that
// still carry the Admitted condition, and the update that takes one out of
// its queue.
func TestQueued(t *testing.T) {
	plain := testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining)
	admittedBefore := plain.DeepCopy()
	meta.SetStatusCondition(&admittedBefore.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted,
		Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonPending})
	inQueue := queuedPCS()
	p := queued()
	tests := []struct {
		name string
		old  *copsev1alpha1.PodCliqueSet
		obj  *copsev1alpha1.PodCliqueSet
		want bool
	}{
		{name: "in a queue", obj: inQueue, want: true},
		{name: "never queued", obj: plain, want: false},
		{name: "out of its queue, still carrying Admitted", obj: admittedBefore, want: true},
		{name: "an empty queue label is none", obj: withLabel(plain.DeepCopy(), kueue.QueueNameLabel, ""), want: false},
		{name: "the update that removes the label", old: inQueue, obj: plain, want: true},
		{name: "an update of a PodCliqueSet never queued", old: plain, obj: plain, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []bool
			if tt.old != nil {
				got = append(got, p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.obj}))
			} else {
				got = append(got, p.Create(event.CreateEvent{Object: tt.obj}), p.Delete(event.DeleteEvent{Object: tt.obj}),
					p.Generic(event.GenericEvent{Object: tt.obj}), p.Update(event.UpdateEvent{ObjectOld: tt.obj, ObjectNew: tt.obj}))
			}
			for i, g := range got {
				if g != tt.want {
					t.Errorf("event %d passes: %v, want %v", i, g, tt.want)
				}
			}
		})
	}
}

// TestQueuedNaming: a ClusterTopologyBinding change wakes the queued
// PodCliqueSets whose constraints name it, and no other.
func TestQueuedNaming(t *testing.T) {
	other := withPacking(queuedPCS(), "elsewhere")
	other.Name = "other"
	notQueued := withPacking(testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), "fleet")
	notQueued.Name = "not-queued"
	unpacked := queuedPCS()
	unpacked.Name = "unpacked"
	e := newEnv(t, nil, withPacking(queuedPCS(), "fleet"), other, notQueued, unpacked)
	got := e.r.queuedNaming(context.Background(), binding())
	want := []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: testfixtures.Namespace, Name: "llm"}}}
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("queuedNaming = %v, want %v", got, want)
	}
}

func wantNoWorkload(t *testing.T, e env, _ ctrl.Result) {
	t.Helper()
	if wl := e.workload(t); wl != nil {
		t.Fatalf("Workload %s was created", wl.Name)
	}
}

func wantPriority(class string, value int32) func(t *testing.T, e env, _ ctrl.Result) {
	return func(t *testing.T, e env, _ ctrl.Result) {
		t.Helper()
		wl := e.workload(t)
		if wl == nil {
			t.Fatal("no Workload was created")
		}
		if wl.Spec.PriorityClassRef == nil || wl.Spec.PriorityClassRef.Name != class || wl.Spec.Priority == nil || *wl.Spec.Priority != value {
			t.Errorf("priority class %v, priority %v; want %s, %d", wl.Spec.PriorityClassRef, wl.Spec.Priority, class, value)
		}
	}
}

// finalizersOf describes wl by its finalizers, "gone" when it is nil.
func finalizersOf(wl *kueuev1beta2.Workload) any {
	if wl == nil {
		return "gone"
	}
	return wl.Finalizers
}

func withLabel(pcs *copsev1alpha1.PodCliqueSet, key, value string) *copsev1alpha1.PodCliqueSet {
	pcs.Labels = labels.Merge(pcs.Labels, map[string]string{key: value})
	return pcs
}

func withoutFinalizers(wl *kueuev1beta2.Workload) *kueuev1beta2.Workload {
	wl.Finalizers = nil
	return wl
}

// withPacking packs the pods of each PodClique of pcs into one rack of
// ClusterTopologyBinding name.
func withPacking(pcs *copsev1alpha1.PodCliqueSet, name string) *copsev1alpha1.PodCliqueSet {
	for _, clique := range pcs.Spec.Template.Cliques {
		clique.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: name,
			Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	}
	return pcs
}

func binding() *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{
		{Domain: "block", Key: "example.com/block"},
		{Domain: "rack", Key: "example.com/rack"},
		{Domain: "host", Key: corev1.LabelHostname},
	}
	return b
}
