package podclique

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/scheduler"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// kubeletFinalizer keeps a deleted pod terminating in the store until the
// test releases it, as a kubelet does during the grace period.
const kubeletFinalizer = "test.copse.dev/kubelet"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// apiServer is the fake API server the reconciler writes to. It assigns UIDs
// (the fake client does not) and counts every create and delete it receives.
type apiServer struct {
	client.WithWatch
	mu      sync.Mutex
	creates int
	deletes map[types.UID]int
	// statusWrites and statusConflicts count PodClique status patches, and
	// those refused for a stale resourceVersion.
	statusWrites, statusConflicts int
}

func newAPIServer(t *testing.T, scheme *runtime.Scheme, podsLinger bool, objs ...client.Object) *apiServer {
	t.Helper()
	s := &apiServer{deletes: map[types.UID]int{}}
	uids := 0
	s.WithWatch = fake.NewClientBuilder().
		WithScheme(scheme).
		WithStatusSubresource(&copsev1alpha1.PodClique{}, &corev1.Pod{}).
		WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				s.mu.Lock()
				uids++
				obj.SetUID(types.UID(fmt.Sprintf("uid-%03d", uids)))
				s.mu.Unlock()
				if _, isPod := obj.(*corev1.Pod); isPod && podsLinger {
					obj.SetFinalizers(append(obj.GetFinalizers(), kubeletFinalizer))
				}
				if err := c.Create(ctx, obj, opts...); err != nil {
					return err
				}
				if _, isPod := obj.(*corev1.Pod); isPod {
					s.mu.Lock()
					s.creates++
					s.mu.Unlock()
				}
				return nil
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				err := c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
				if _, isClique := obj.(*copsev1alpha1.PodClique); isClique && subResource == "status" {
					s.mu.Lock()
					s.statusWrites++
					if apierrors.IsConflict(err) {
						s.statusConflicts++
					}
					s.mu.Unlock()
				}
				return err
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, isPod := obj.(*corev1.Pod); isPod {
					s.mu.Lock()
					s.deletes[obj.GetUID()]++
					s.mu.Unlock()
				}
				return c.Delete(ctx, obj, opts...)
			},
		}).
		Build()
	return s
}

func (s *apiServer) pods(t *testing.T) (alive, terminating []corev1.Pod) {
	t.Helper()
	list := &corev1.PodList{}
	if err := s.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp != nil {
			terminating = append(terminating, pod)
		} else {
			alive = append(alive, pod)
		}
	}
	return alive, terminating
}

func (s *apiServer) totalDeletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.deletes {
		n += c
	}
	return n
}

// deletedTwice names the pods that received more than one delete call.
func (s *apiServer) deletedTwice() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.UID
	for uid, c := range s.deletes {
		if c > 1 {
			out = append(out, uid)
		}
	}
	return out
}

// laggingClient is the reconciler's view of the cluster: writes go to the
// API server at once, reads come from a snapshot taken at the last catchUp,
// like an informer cache whose watch events have not arrived yet.
type laggingClient struct {
	*apiServer
	scheme   *runtime.Scheme
	snapshot client.Client
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.snapshot.Get(ctx, key, obj, opts...)
}

func (c *laggingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.snapshot.List(ctx, list, opts...)
}

// catchUp delivers every pending watch event: the snapshot becomes a copy of
// the API server's current state.
func (c *laggingClient) catchUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var objs []runtime.Object
	for _, list := range []client.ObjectList{&corev1.PodList{}, &copsev1alpha1.PodCliqueList{}, &copsev1alpha1.PodCliqueSetList{}, &corev1.NodeList{},
		&resourcev1.ResourceClaimList{}} {
		if err := c.apiServer.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, items...)
	}
	c.snapshot = fake.NewClientBuilder().WithScheme(c.scheme).WithRuntimeObjects(objs...).Build()
}

type harness struct {
	server   *apiServer
	cache    *laggingClient
	r        *Reconciler
	recorder *events.FakeRecorder
	pclq     types.NamespacedName
}

func newHarness(t *testing.T, podsLinger bool, pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique) *harness {
	t.Helper()
	scheme := testScheme(t)
	server := newAPIServer(t, scheme, podsLinger, pcs, pclq)
	cache := &laggingClient{apiServer: server, scheme: scheme}
	cache.catchUp(t)
	recorder := events.NewFakeRecorder(10000)
	return &harness{
		server: server, cache: cache, recorder: recorder,
		pclq: client.ObjectKeyFromObject(pclq),
		r: &Reconciler{
			Client:       cache,
			APIReader:    server,
			Scheme:       scheme,
			Recorder:     recorder,
			Expectations: expectations.New(expectations.Options{}),
			Decorators:   []blueprint.PodDecorator{(&scheduler.Workload{}).PodDecorator(), lifecycle.OutcomeFinalizer()},
		},
	}
}

func (h *harness) reconcile(t *testing.T, times int) {
	t.Helper()
	for range times {
		if _, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
}

func (h *harness) setReplicas(t *testing.T, replicas int32) {
	t.Helper()
	pclq := &copsev1alpha1.PodClique{}
	if err := h.server.Get(context.Background(), h.pclq, pclq); err != nil {
		t.Fatal(err)
	}
	pclq.Spec.Replicas = replicas
	if err := h.server.Update(context.Background(), pclq); err != nil {
		t.Fatal(err)
	}
}

// releaseTerminating lets every terminating pod go, as the kubelet does at
// the end of the grace period.
func (h *harness) releaseTerminating(t *testing.T) {
	t.Helper()
	_, terminating := h.server.pods(t)
	for i := range terminating {
		pod := &terminating[i]
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == kubeletFinalizer })
		if err := h.server.Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
}

func podIndices(t *testing.T, pods []corev1.Pod) []int {
	t.Helper()
	var out []int
	for _, pod := range pods {
		i, ok := labels.Index(pod.Labels, labels.PodIndexKey)
		if !ok {
			t.Fatalf("pod %s has no index", pod.Name)
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// TestLaggingCacheNeverDoublesWrites is the required test: the
// reconciler runs again and again while its cache misses its own writes, and
// must create and delete exactly what is needed, once.
func TestLaggingCacheNeverDoublesWrites(t *testing.T) {
	for _, podsLinger := range []bool{false, true} {
		name := "deleted pods vanish at once"
		if podsLinger {
			name = "deleted pods stay terminating for a while"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, podsLinger, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(3))

			// Scale-out from nothing while the cache shows no pod.
			h.reconcile(t, 5)
			alive, _ := h.server.pods(t)
			if len(alive) != 3 || h.server.creates != 3 {
				t.Fatalf("stale cache: %d pods exist after %d creates, want exactly 3", len(alive), h.server.creates)
			}
			if got := podIndices(t, alive); !slices.Equal(got, []int{0, 1, 2}) {
				t.Fatalf("indices %v, want [0 1 2]", got)
			}
			h.cache.catchUp(t)
			h.reconcile(t, 3)
			if h.server.creates != 3 {
				t.Fatalf("%d creates after the cache caught up, want 3", h.server.creates)
			}

			// Scale-in by 2 while the cache keeps showing all three pods.
			h.setReplicas(t, 1)
			h.cache.catchUp(t)
			h.reconcile(t, 5)
			if n := h.server.totalDeletes(); n != 2 {
				t.Fatalf("stale cache: %d delete calls for a scale-in by 2", n)
			}
			if twice := h.server.deletedTwice(); len(twice) > 0 {
				t.Fatalf("pods deleted twice: %v", twice)
			}
			alive, _ = h.server.pods(t)
			if got := podIndices(t, alive); !slices.Equal(got, []int{0}) {
				t.Fatalf("after scale-in alive indices %v, want [0]", got)
			}

			// The cache now shows the deletions (terminating or gone).
			h.cache.catchUp(t)
			h.reconcile(t, 3)
			h.releaseTerminating(t)
			h.cache.catchUp(t)
			h.reconcile(t, 3)
			if n, c := h.server.totalDeletes(), h.server.creates; n != 2 || c != 3 {
				t.Fatalf("after catching up: %d deletes and %d creates, want 2 and 3", n, c)
			}
			alive, terminating := h.server.pods(t)
			if len(alive) != 1 || len(terminating) != 0 {
				t.Fatalf("end state: %d alive, %d terminating pods, want 1 and 0", len(alive), len(terminating))
			}

			pclq := &copsev1alpha1.PodClique{}
			if err := h.server.Get(context.Background(), h.pclq, pclq); err != nil {
				t.Fatal(err)
			}
			if pclq.Status.Replicas != 1 || ptr.Deref(pclq.Status.ObservedGeneration, 0) != pclq.Generation {
				t.Errorf("status replicas %d observedGeneration %v, want 1 at generation %d",
					pclq.Status.Replicas, pclq.Status.ObservedGeneration, pclq.Generation)
			}
		})
	}
}

// TestFailedPodIsReplacedOnce: an Inference pod that failed is deleted and
// recreated at its index, once, however often a stale cache shows it failed.
func TestFailedPodIsReplacedOnce(t *testing.T) {
	h := newHarness(t, true, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(3))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	var failedPod corev1.Pod
	for _, pod := range alive {
		if pod.Labels[labels.PodIndexKey] == "1" {
			failedPod = pod
		}
	}
	failedPod.Status.Phase = corev1.PodFailed
	if err := h.server.Status().Update(context.Background(), &failedPod); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)

	h.reconcile(t, 5)
	if n := h.server.deletes[failedPod.UID]; n != 1 || h.server.totalDeletes() != 1 {
		t.Fatalf("failed pod deleted %d times, %d deletes in all; want 1 and 1", n, h.server.totalDeletes())
	}
	if h.server.creates != 4 {
		t.Fatalf("%d creates, want 3 + 1 replacement", h.server.creates)
	}
	alive, terminating := h.server.pods(t)
	if got := podIndices(t, alive); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("alive indices %v, want [0 1 2]", got)
	}
	if len(terminating) != 1 || terminating[0].UID != failedPod.UID {
		t.Errorf("terminating %v, want only the failed pod", terminating)
	}

	h.cache.catchUp(t)
	h.reconcile(t, 3)
	if h.server.creates != 4 || h.server.totalDeletes() != 1 {
		t.Errorf("after catching up: %d creates, %d deletes; want 4 and 1", h.server.creates, h.server.totalDeletes())
	}
}

// TestTrainingSucceededPodIsKept: a Training pod that exited 0 keeps its
// index and is not recreated.
func TestTrainingSucceededPodIsKept(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	done := alive[0]
	done.Status.Phase = corev1.PodSucceeded
	if err := h.server.Status().Update(context.Background(), &done); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 3)
	if h.server.creates != 2 || h.server.totalDeletes() != 0 {
		t.Errorf("%d creates, %d deletes; want 2 and 0", h.server.creates, h.server.totalDeletes())
	}
}

func TestGroupedCliquePodsCarryGroupEnvironment(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.GroupedClique(2))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	if len(alive) != 2 {
		t.Fatalf("%d pods, want 2", len(alive))
	}
	for _, pod := range alive {
		env := map[string]string{}
		for _, e := range pod.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["GROVE_PCSG_TEMPLATE_NUM_PODS"] != "5" || env["GROVE_PCSG_NAME"] != "llm-1-decode" {
			t.Errorf("pod %s env %v", pod.Name, env)
		}
		if pod.Spec.SchedulingGroup == nil || ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, "") != "llm-1-decode-2" {
			t.Errorf("pod %s: the decorators were not applied: schedulingGroup %v", pod.Name, pod.Spec.SchedulingGroup)
		}
		if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "PodClique" || !ptr.Deref(pod.OwnerReferences[0].Controller, false) {
			t.Errorf("pod %s owner references %v", pod.Name, pod.OwnerReferences)
		}
	}
}

func TestStatusAndConditionsAreWritten(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	for i := range alive {
		pod := &alive[i]
		pod.Spec.NodeName = "node-a"
		if err := h.server.Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := h.server.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)

	pclq := &copsev1alpha1.PodClique{}
	if err := h.server.Get(context.Background(), h.pclq, pclq); err != nil {
		t.Fatal(err)
	}
	s := pclq.Status
	if s.Replicas != 2 || s.ReadyReplicas != 2 || s.ScheduledReplicas != 2 || ptr.Deref(s.Selector, "") != "grove.io/podclique=llm-1-leader" {
		t.Errorf("status %+v", s)
	}
	for condType, want := range map[string]metav1.ConditionStatus{
		groveconstants.ConditionTypePodCliqueScheduled:   metav1.ConditionTrue,
		groveconstants.ConditionTypeMinAvailableBreached: metav1.ConditionFalse,
	} {
		if c := meta.FindStatusCondition(s.Conditions, condType); c == nil || c.Status != want {
			t.Errorf("%s = %+v, want %s", condType, c, want)
		}
	}
}

func TestPodCliqueWithoutPodCliqueSetGetsNoPods(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(2))
	if err := h.server.Delete(context.Background(), testfixtures.PodCliqueSet("")); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq})
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("result %+v, error %v; want a delayed retry and no error", res, err)
	}
	if h.server.creates != 0 {
		t.Errorf("%d pods created", h.server.creates)
	}
}

func TestPodCliqueWithoutRequiredLabelsGetsNoPods(t *testing.T) {
	pclq := testfixtures.StandaloneClique(2)
	delete(pclq.Labels, labels.PodGangKey)
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), pclq)
	h.reconcile(t, 1)
	if h.server.creates != 0 {
		t.Errorf("%d pods created", h.server.creates)
	}
	select {
	case e := <-h.recorder.Events:
		if want := "Warning " + EventReasonInvalidPodClique; len(e) < len(want) || e[:len(want)] != want {
			t.Errorf("event %q, want %s", e, want)
		}
	default:
		t.Error("no event")
	}
}

func TestDeletedPodCliqueForgetsExpectations(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	key := expectations.Key(h.pclq.Namespace, h.pclq.Name)
	if len(h.r.Expectations.Pending(key).Creations) != 2 {
		t.Fatal("expected 2 pending creations")
	}
	if err := h.server.Delete(context.Background(), testfixtures.StandaloneClique(2)); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if p := h.r.Expectations.Pending(key); len(p.Creations)+len(p.Deletions) != 0 {
		t.Errorf("expectations left for a deleted PodClique: %+v", p)
	}
}

// TestRecreatedPodCliqueIsNotHeldBackByItsPredecessor: a PodClique deleted
// and recreated under the same name (a replica restart) before this
// controller saw it gone gets its pods at once, although pods created for
// its predecessor were never seen by the cache.
func TestRecreatedPodCliqueIsNotHeldBackByItsPredecessor(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(3))
	h.reconcile(t, 1)
	ctx := context.Background()
	alive, _ := h.server.pods(t)
	for i := range alive {
		if err := h.server.Delete(ctx, &alive[i]); err != nil { // the garbage collector's work
			t.Fatal(err)
		}
	}
	if err := h.server.Delete(ctx, testfixtures.StandaloneClique(3)); err != nil {
		t.Fatal(err)
	}
	successor := testfixtures.StandaloneClique(3)
	successor.UID = "successor-uid"
	if err := h.server.Create(ctx, successor); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)

	h.reconcile(t, 1)
	alive, _ = h.server.pods(t)
	if len(alive) != 3 {
		t.Fatalf("%d pods for the recreated PodClique, want 3", len(alive))
	}
	for _, pod := range alive {
		if ref := metav1.GetControllerOf(&pod); ref == nil || ref.UID != successor.UID {
			t.Errorf("pod %s controlled by %v, want the successor", pod.Name, ref)
		}
	}
}

func TestCreateFailureIsReportedAndRetried(t *testing.T) {
	scheme := testScheme(t)
	server := newAPIServer(t, scheme, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(8))
	refusing := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&copsev1alpha1.PodClique{}, &corev1.Pod{}).
		WithObjects(testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(8)).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				return fmt.Errorf("quota exceeded")
			},
		}).Build()
	server.WithWatch = refusing
	cache := &laggingClient{apiServer: server, scheme: scheme}
	cache.catchUp(t)
	recorder := events.NewFakeRecorder(100)
	r := &Reconciler{Client: cache, APIReader: server, Scheme: scheme, Recorder: recorder, Expectations: expectations.New(expectations.Options{})}

	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(testfixtures.StandaloneClique(8))})
	if err == nil {
		t.Fatalf("no error: the request would not be retried (result %+v)", res)
	}
	if e := <-recorder.Events; e[:len("Warning "+EventReasonPodCreateFailed)] != "Warning "+EventReasonPodCreateFailed {
		t.Errorf("event %q", e)
	}
	if p := r.Expectations.Pending(expectations.Key(testfixtures.Namespace, "llm-1-leader")); len(p.Creations) != 0 {
		t.Errorf("failed creations recorded as expectations: %+v", p)
	}
}

// TestPassWaitsForTheCacheToShowItsOwnStatusWrite: a pass that runs before
// the cache shows this controller's last status write would compute from
// the older PodClique and lose the optimistic-lock race; it waits instead,
// and the pass after the cache caught up goes on.
func TestPassWaitsForTheCacheToShowItsOwnStatusWrite(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	if h.server.statusWrites != 1 {
		t.Fatalf("%d status writes in the first pass, want 1", h.server.statusWrites)
	}
	alive, _ := h.server.pods(t)
	for i := range alive { // the pods run: the status must change again
		alive[i].Status.Phase = corev1.PodRunning
		alive[i].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := h.server.Status().Update(context.Background(), &alive[i]); err != nil {
			t.Fatal(err)
		}
	}

	result, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.pclq})
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != requeue.CacheCatchUp || h.server.statusWrites != 1 {
		t.Errorf("pass on a cache behind its own write: requeue %v and %d status writes, want %v and 1",
			result.RequeueAfter, h.server.statusWrites, requeue.CacheCatchUp)
	}

	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if h.server.statusWrites != 2 || h.server.statusConflicts != 0 {
		t.Errorf("after the cache caught up: %d status writes, %d conflicts; want 2, 0", h.server.statusWrites, h.server.statusConflicts)
	}
}

// TestLatePodsDoNotJoinAPlacedGang: a clique whose first pods come after
// another clique's pods of the same gang and run were bound (its pods were
// held back while the replica was being recreated, or the operator
// restarted between the cliques) creates pods outside the gang: the gang's
// minCount counts only its pods that still run, and the bound peers may
// have ended. A bound pod of an earlier run of the replica does not count.
func TestLatePodsDoNotJoinAPlacedGang(t *testing.T) {
	cases := []struct {
		name        string
		peerAttempt string
		peerNode    string
		wantInGang  bool
	}{
		{name: "no peer bound yet", peerAttempt: "1", wantInGang: true},
		{name: "a peer of this run is bound", peerAttempt: "1", peerNode: "node-a", wantInGang: false},
		{name: "only a peer of the previous run is bound", peerAttempt: "0", peerNode: "node-a", wantInGang: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pclq := testfixtures.StandaloneClique(2)
			pclq.Labels[labels.AttemptKey] = "1"
			h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), pclq)
			peer := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: pclq.Namespace, Name: "llm-1-worker-peer", Labels: map[string]string{
					labels.PartOfKey: "llm", labels.PodGangKey: pclq.Labels[labels.PodGangKey], labels.AttemptKey: c.peerAttempt,
					labels.PodCliqueKey: "llm-1-worker",
				}},
				Spec: corev1.PodSpec{NodeName: c.peerNode, Containers: []corev1.Container{{Name: "main", Image: "x"}}},
			}
			if err := h.server.Create(context.Background(), peer); err != nil {
				t.Fatal(err)
			}
			h.cache.catchUp(t)
			h.reconcile(t, 1)
			alive, _ := h.server.pods(t)
			created := 0
			for _, pod := range alive {
				if pod.Labels[labels.PodCliqueKey] != pclq.Name {
					continue
				}
				created++
				if inGang := pod.Spec.SchedulingGroup != nil; inGang != c.wantInGang {
					t.Errorf("pod %s: in the gang %v, want %v", pod.Name, inGang, c.wantInGang)
				}
			}
			if created != 2 {
				t.Errorf("%d pods of the clique created, want 2", created)
			}
		})
	}
}

// TestScaledGangPodsAreCreatedInTheBaseGangsDomain covers a scaled gang of
// a replica packed at a level: its pods are created only once a pod of the
// base gang (same replica and run) is bound, with a node selector for that
// pod's node's domain of the level.
func TestScaledGangPodsAreCreatedInTheBaseGangsDomain(t *testing.T) {
	const blockKey = "example.com/block"
	pclq := testfixtures.GroupedClique(2) // llm-1-decode-2-worker, gang llm-1-decode-2
	pclq.Annotations = map[string]string{labels.ReplicaDomainKeyAnnotation: blockKey}
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeInference), pclq)
	ctx := context.Background()
	basePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pclq.Namespace, Name: "llm-1-leader-x", Labels: map[string]string{
			labels.PartOfKey: "llm", labels.PodGangKey: "llm-1", labels.AttemptKey: "0", labels.PodCliqueKey: "llm-1-leader"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{blockKey: "block-1"}}}
	for _, obj := range []client.Object{basePod, node} {
		if err := h.server.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	workerPods := func() []corev1.Pod {
		alive, _ := h.server.pods(t)
		var out []corev1.Pod
		for _, pod := range alive {
			if pod.Labels[labels.PodCliqueKey] == pclq.Name {
				out = append(out, pod)
			}
		}
		return out
	}

	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if got := workerPods(); len(got) != 0 {
		t.Fatalf("%d pods created while the base gang is not placed, want none", len(got))
	}

	basePod.Spec.NodeName = "node-a"
	if err := h.server.Update(ctx, basePod); err != nil {
		t.Fatal(err)
	}
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	got := workerPods()
	if len(got) != 2 {
		t.Fatalf("%d pods created once the base gang is placed, want 2", len(got))
	}
	for _, pod := range got {
		if pod.Spec.NodeSelector[blockKey] != "block-1" {
			t.Errorf("pod %s node selector %v, want %s=block-1", pod.Name, pod.Spec.NodeSelector, blockKey)
		}
		if pod.Spec.SchedulingGroup == nil {
			t.Errorf("pod %s joins no PodGroup: a scaled gang is still placed as a gang", pod.Name)
		}
	}
}
