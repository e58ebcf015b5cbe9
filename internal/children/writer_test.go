package children

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
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

func TestBudget(t *testing.T) {
	b := NewBudget(5)
	if !b.Take(2) || b.Exhausted() {
		t.Fatal("2 of 5 must fit")
	}
	if got := Cut(b, make([]int, 4)); len(got) != 3 || !b.Exhausted() {
		t.Errorf("cut to %d, exhausted %v; want the 3 that fit, and the rest left", len(got), b.Exhausted())
	}
	if b.Take(1) {
		t.Error("nothing is left")
	}
	if got := Cut(NewBudget(10), make([]string, 4)); len(got) != 4 {
		t.Errorf("cut %d of 4 within budget", len(got))
	}
	b = NewBudget(3)
	b.spend(2, false)
	if b.Remaining() != 1 || b.Exhausted() {
		t.Errorf("after spending 2 of 3: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
	b.spend(1, true)
	if b.Remaining() != 0 || !b.Exhausted() {
		t.Errorf("a plan cut short leaves the budget exhausted: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
}

// The cut hook runs once per pass, however many writes are left out, and
// never for a pass that fits.
func TestBudgetCallsOnCutOnce(t *testing.T) {
	cuts := 0
	count := func() { cuts++ }
	b := NewBudget(2).OnCut(count)
	Cut(b, make([]int, 2))
	if cuts != 0 {
		t.Fatalf("a pass that fits was counted as cut %d times", cuts)
	}
	b.Take(1)
	Cut(b, make([]int, 3))
	b.spend(0, true)
	if cuts != 1 {
		t.Errorf("a pass cut three times was counted %d times; want once", cuts)
	}
	if NewBudget(0).Take(1) {
		t.Error("a budget of 0 takes nothing")
	}
}

// recorder is an fn for InSlowStart that counts calls per item and the
// most calls it saw in flight at once.
type recorder struct {
	mu                    sync.Mutex
	called                map[int]int
	inFlight, maxInFlight int
	failing               map[int]bool
	delay                 time.Duration
	// failed is closed when the first failing item's call returns; calls
	// of later items wait for it, so how many start before the failure is
	// seen depends on the window and not on how the goroutines are
	// scheduled.
	failed     chan struct{}
	failedOnce sync.Once
}

func newRecorder(failing map[int]bool, delay time.Duration) *recorder {
	return &recorder{failing: failing, delay: delay, failed: make(chan struct{})}
}

// afterAFailure says whether item comes after a failing item.
func (r *recorder) afterAFailure(item int) bool {
	for failing := range r.failing {
		if failing < item {
			return true
		}
	}
	return false
}

func (r *recorder) call(_ context.Context, item int) error {
	r.mu.Lock()
	if r.called == nil {
		r.called = map[int]int{}
	}
	r.called[item]++
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	time.Sleep(r.delay)
	if !r.failing[item] && r.afterAFailure(item) {
		<-r.failed
	}
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if r.failing[item] {
		r.failedOnce.Do(func() { close(r.failed) })
		return errors.New("boom")
	}
	return nil
}

func TestInSlowStart(t *testing.T) {
	cases := []struct {
		name          string
		n, start      int
		failing       map[int]bool
		wantCalledMin int // items 0..m-1 are called once for some m in [min, max], no others
		wantCalledMax int
		wantSucceeded int // -1: called - len(failing)
		wantErr       bool
	}{
		{name: "nothing to do", n: 0, start: 1},
		{name: "every item once", n: 100, start: 1, wantCalledMin: 100, wantCalledMax: 100, wantSucceeded: 100},
		{name: "the first call fails: nothing more is tried", n: 100, start: 1, failing: map[int]bool{0: true},
			wantCalledMin: 1, wantCalledMax: 1, wantErr: true},
		// Calls after the failing one hold their window slot until it
		// returns, so at most the rest of its window (7) starts before it
		// and the run stops well before n. The exact rule (no call starts
		// once a failure is recorded) is TestSlowStartAdmitsNothingAfterAFailure.
		{name: "a failure stops the run", n: 100, start: 1, failing: map[int]bool{20: true},
			wantCalledMin: 21, wantCalledMax: 99, wantSucceeded: -1, wantErr: true},
		{name: "a failing first window reports each failure", n: 100, start: 8, failing: map[int]bool{1: true, 2: true},
			wantCalledMin: 8, wantCalledMax: 99, wantSucceeded: -1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder(c.failing, time.Millisecond)
			succeeded, err := InSlowStart(context.Background(), c.n, c.start, 8, time.Time{}, r.call)
			called := len(r.called)
			if called < c.wantCalledMin || called > c.wantCalledMax {
				t.Errorf("%d items called, want %d to %d", called, c.wantCalledMin, c.wantCalledMax)
			}
			for i := range called {
				if r.called[i] != 1 {
					t.Errorf("item %d called %d times, want the first %d items once each", i, r.called[i], called)
				}
			}
			if c.wantSucceeded == -1 {
				c.wantSucceeded = called - len(c.failing)
			}
			if succeeded != c.wantSucceeded || (err != nil) != c.wantErr {
				t.Errorf("succeeded %d, err %v; want %d, error %v", succeeded, err, c.wantSucceeded, c.wantErr)
			}
			if n := len(failures(err)); c.wantErr && n != len(c.failing) {
				t.Errorf("%d failures reported, want %d", n, len(c.failing))
			}
			if r.maxInFlight > 8 {
				t.Errorf("%d calls in flight at once, limit 8", r.maxInFlight)
			}
		})
	}
}

func failures(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// TestInSlowStartGrowsItsWindowLikeBatches: the calls run concurrently and
// never more than the window allows. How the window grows is checked exactly
// in TestSlowStartAdmitsNothingAfterAFailure; here only the bound is exact,
// because how many calls overlap also depends on goroutine scheduling.
func TestInSlowStartGrowsItsWindowLikeBatches(t *testing.T) {
	cases := []struct{ n, start, limit, wantMaxInFlight int }{
		{n: 1, start: 1, limit: 8, wantMaxInFlight: 1},
		{n: 2, start: 1, limit: 8, wantMaxInFlight: 1}, // the second call starts after the first succeeded
		{n: 3, start: 1, limit: 8, wantMaxInFlight: 2},
		{n: 200, start: 1, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 16, limit: 8, wantMaxInFlight: 8},
		{n: 200, start: 4, limit: 4, wantMaxInFlight: 4},
	}
	for _, c := range cases {
		r := newRecorder(nil, 5*time.Millisecond)
		if _, err := InSlowStart(context.Background(), c.n, c.start, c.limit, time.Time{}, r.call); err != nil {
			t.Fatal(err)
		}
		if r.maxInFlight > c.wantMaxInFlight {
			t.Errorf("n %d, start %d, limit %d: %d calls in flight at once, want at most %d", c.n, c.start, c.limit, r.maxInFlight, c.wantMaxInFlight)
		}
		if c.n >= 100 && r.maxInFlight < 2 {
			t.Errorf("n %d, start %d, limit %d: the calls never overlapped", c.n, c.start, c.limit)
		}
	}
}

// TestInSlowStartDoesNotWaitForItsSlowestCall: while one call hangs, the
// others go on through the rest of the window. Batches that wait for their
// slowest member would never reach item 5, which item 0 waits for.
func TestInSlowStartDoesNotWaitForItsSlowestCall(t *testing.T) {
	fifthStarted := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		_, err := InSlowStart(context.Background(), 10, 2, 2, time.Time{}, func(_ context.Context, item int) error {
			switch item {
			case 0:
				select {
				case <-fifthStarted:
				case <-time.After(5 * time.Second):
					return errors.New("item 5 never started while item 0 was in flight")
				}
			case 5:
				close(fifthStarted)
			}
			return nil
		})
		finished <- err
	}()
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
}

func TestInSlowStartStopsStartingCallsAfterItsTime(t *testing.T) {
	r := &recorder{delay: 20 * time.Millisecond}
	stopBy := time.Now().Add(50 * time.Millisecond)
	succeeded, err := InSlowStart(context.Background(), 100, 1, 1, stopBy, r.call)
	calls := len(r.called)
	if err != nil || succeeded != calls || calls < 2 || calls > 4 {
		t.Errorf("succeeded %d of %d calls, err %v; want the calls started within 50ms (about 3), no error", succeeded, calls, err)
	}
}

func TestInSlowStartStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{}
	succeeded, err := InSlowStart(ctx, 100, 1, 1, time.Time{}, func(ctx context.Context, item int) error {
		if item == 2 {
			cancel()
		}
		return r.call(ctx, item)
	})
	if err != nil || succeeded != 3 {
		t.Errorf("succeeded %d, err %v; want the 3 calls started before the context ended", succeeded, err)
	}
	if diff := cmp.Diff(map[int]int{0: 1, 1: 1, 2: 1}, r.called); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestSlowStartAdmitsNothingAfterAFailure drives the window by hand: it
// grows 1, 2, 4, 8 with successes, and once a failure is recorded no call is
// admitted although the window has room.
func TestSlowStartAdmitsNothingAfterAFailure(t *testing.T) {
	s := newSlowStart(1, 8)
	var windows []int
	for range 7 {
		if !s.admit(time.Time{}) {
			t.Fatal("admit refused a call before any failure")
		}
		s.done(nil)
		windows = append(windows, s.window)
	}
	if diff := cmp.Diff([]int{2, 2, 4, 4, 4, 4, 8}, windows); diff != "" {
		t.Errorf("window after each success (-want +got):\n%s", diff)
	}
	if s.admit(time.Now().Add(-time.Second)) {
		t.Error("admit let a call start past stopBy")
	}
	for range 3 {
		if !s.admit(time.Time{}) {
			t.Fatal("admit refused a call with room in the window")
		}
	}
	s.done(errors.New("boom"))
	if s.admit(time.Time{}) {
		t.Error("admit let a call start after a failure")
	}
	if s.inFlight != 2 {
		t.Errorf("%d calls in flight, want the 2 admitted before the failure", s.inFlight)
	}
}
