package podclique

import (
	"context"
	"strconv"
	"testing"
	"time"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/testfixtures"
)

// setPodStatus changes the status of the pod at index on the API server, as
// the kubelet would.
func (h *harness) setPodStatus(t *testing.T, index int, change func(*corev1.PodStatus)) {
	t.Helper()
	alive, _ := h.server.pods(t)
	for i := range alive {
		if alive[i].Labels[labels.PodIndexKey] != strconv.Itoa(index) {
			continue
		}
		change(&alive[i].Status)
		if err := h.server.Status().Update(context.Background(), &alive[i]); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no pod at index %d", index)
}

func exitWith(code int32) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Phase = corev1.PodSucceeded
		if code != 0 {
			s.Phase = corev1.PodFailed
		}
		// Finished a minute ago: a replacement's back-off has passed.
		finished := metav1.NewTime(time.Now().Add(-time.Minute))
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: finished, FinishedAt: finished},
		}}}
	}
}

// deleteAllPods removes the clique's pods for good, as the PodCliqueSet
// controller does when it ends a workload or restarts a replica (it
// releases the outcome finalizer with the deletion).
func (h *harness) deleteAllPods(t *testing.T) {
	t.Helper()
	alive, _ := h.server.pods(t)
	for i := range alive {
		h.removePod(t, &alive[i])
	}
}

// removePod releases the pod's finalizers and deletes it.
func (h *harness) removePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Finalizers = nil
	if err := h.server.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if err := h.server.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) podClique(t *testing.T) *copsev1alpha1.PodClique {
	t.Helper()
	pclq := &copsev1alpha1.PodClique{}
	if err := h.server.Get(context.Background(), h.pclq, pclq); err != nil {
		t.Fatal(err)
	}
	return pclq
}

func (h *harness) endWorkload(t *testing.T, phase copsev1alpha1.PodCliqueSetPhase, conditions ...metav1.Condition) {
	t.Helper()
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := h.server.Get(context.Background(), client.ObjectKey{Namespace: testfixtures.Namespace, Name: "llm"}, pcs); err != nil {
		t.Fatal(err)
	}
	pcs.Status.Phase = phase
	pcs.Status.Conditions = conditions
	if err := h.server.Update(context.Background(), pcs); err != nil {
		t.Fatal(err)
	}
}

// TestTrainingCliqueSucceedsOnceAndForAll: when every pod exited 0 the
// status write of that reconcile carries Succeeded=True, no pod is deleted
// for it, and once the pods are garbage collected the clique neither gets
// new pods nor loses or changes the condition.
func TestTrainingCliqueSucceedsOnceAndForAll(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	h.setPodStatus(t, 0, exitWith(0))
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if c := meta.FindStatusCondition(h.podClique(t).Status.Conditions, copsev1alpha1.ConditionTypeSucceeded); c != nil {
		t.Fatalf("Succeeded %+v with one pod still running", c)
	}

	h.setPodStatus(t, 1, exitWith(0))
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	first := meta.FindStatusCondition(h.podClique(t).Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)
	if first == nil || first.Status != metav1.ConditionTrue || first.Reason != copsev1alpha1.ReasonAllPodsSucceeded || first.Message != "all 2 pods exited 0" {
		t.Fatalf("Succeeded = %+v, want True (AllPodsSucceeded) in the reconcile that saw the pods finish", first)
	}
	if h.server.creates != 2 || h.server.totalDeletes() != 0 {
		t.Fatalf("%d creates, %d deletes; want 2 and 0", h.server.creates, h.server.totalDeletes())
	}

	h.deleteAllPods(t)
	h.cache.catchUp(t)
	h.reconcile(t, 3)
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if h.server.creates != 2 {
		t.Errorf("%d creates after the pods of a succeeded clique were removed, want none beyond the first 2", h.server.creates)
	}
	conds := h.podClique(t).Status.Conditions
	if c := meta.FindStatusCondition(conds, copsev1alpha1.ConditionTypeSucceeded); c == nil || *c != *first {
		t.Errorf("Succeeded changed to %+v, want %+v", c, first)
	}
	if c := meta.FindStatusCondition(conds, groveconstants.ConditionTypeMinAvailableBreached); c.Status != metav1.ConditionFalse {
		t.Errorf("MinAvailableBreached %+v after the pods were removed, want False", c)
	}
}

// TestEndedTrainingWorkloadGetsNoPods: once the PodCliqueSet of a Training
// workload ended (or is marked Failed), pods it terminated are not
// recreated and failed pods are not replaced, but status is still written.
// The control case shows both would happen while the workload runs.
func TestEndedTrainingWorkloadGetsNoPods(t *testing.T) {
	failed := metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonMaxRuntimeExceeded, LastTransitionTime: metav1.Now()}
	cases := []struct {
		name         string
		phase        copsev1alpha1.PodCliqueSetPhase
		conditions   []metav1.Condition
		wantCreates  int
		wantDeletes  int
		wantReplicas int32
	}{
		{"control: running", copsev1alpha1.PodCliqueSetPhaseRunning, nil, 3 + 2, 1 + 1, 2},
		{"phase Failed", copsev1alpha1.PodCliqueSetPhaseFailed, []metav1.Condition{failed}, 3, 1, 1},
		{"phase Succeeded", copsev1alpha1.PodCliqueSetPhaseSucceeded, nil, 3, 1, 1},
		{"Failed condition, phase not yet written", copsev1alpha1.PodCliqueSetPhaseRunning, []metav1.Condition{failed}, 3, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pclq := testfixtures.StandaloneClique(3)
			pclq.Spec.MinAvailable = ptr.To[int32](1)
			h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), pclq)
			h.reconcile(t, 1)
			h.setPodStatus(t, 1, func(s *corev1.PodStatus) {
				s.Phase = corev1.PodRunning
				s.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			})
			h.cache.catchUp(t)
			h.reconcile(t, 1) // the cache confirms the creations

			h.endWorkload(t, c.phase, c.conditions...)
			h.setPodStatus(t, 0, exitWith(1))
			alive, _ := h.server.pods(t)
			for i := range alive {
				if alive[i].Labels[labels.PodIndexKey] == "2" {
					h.removePod(t, &alive[i])
				}
			}
			h.cache.catchUp(t)
			h.reconcile(t, 3)
			h.cache.catchUp(t) // a replaced pod is gone: its index may get a pod
			h.reconcile(t, 1)
			if h.server.creates != c.wantCreates || h.server.totalDeletes() != c.wantDeletes {
				t.Errorf("%d creates, %d deletes; want %d and %d", h.server.creates, h.server.totalDeletes(), c.wantCreates, c.wantDeletes)
			}
			if status := h.podClique(t).Status; status.Replicas != c.wantReplicas || status.ReadyReplicas != 1 {
				t.Errorf("status replicas %d ready %d, want %d and 1: status is written whatever the plan", status.Replicas, status.ReadyReplicas, c.wantReplicas)
			}
		})
	}
}

// TestLiveReadStopsCreationsWhenCacheLags: the pods of a Training clique
// are removed and the cache shows that, but not yet why: the PodCliqueSet
// controller marked the workload Failed, or this controller wrote the
// clique's Succeeded condition. The read from the API server keeps the pods
// from being started again; without it they would be.
func TestLiveReadStopsCreationsWhenCacheLags(t *testing.T) {
	succeed := func(t *testing.T, h *harness) {
		pclq := h.podClique(t)
		meta.SetStatusCondition(&pclq.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeSucceeded,
			Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonAllPodsSucceeded, Message: "all 3 pods exited 0"})
		if err := h.server.Status().Update(context.Background(), pclq); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		why  func(*testing.T, *harness)
		// lockedToo: the change is to the PodClique itself, so the
		// optimistic lock of the status write, which comes first, refuses
		// the stale view as well.
		lockedToo bool
	}{
		{"the workload failed", func(t *testing.T, h *harness) { h.endWorkload(t, copsev1alpha1.PodCliqueSetPhaseFailed) }, false},
		{"the workload succeeded", func(t *testing.T, h *harness) { h.endWorkload(t, copsev1alpha1.PodCliqueSetPhaseSucceeded) }, false},
		{"the clique succeeded", succeed, true},
	}
	for _, c := range cases {
		for _, liveRead := range []bool{true, false} {
			t.Run(c.name+", live read "+strconv.FormatBool(liveRead), func(t *testing.T) {
				h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(3))
				if !liveRead {
					// The "live" read sees only what the cache sees.
					h.r.APIReader = h.cache
				}
				h.reconcile(t, 1)
				h.cache.catchUp(t)
				h.reconcile(t, 1) // the cache confirms the creations
				h.deleteAllPods(t)
				h.cache.catchUp(t)
				c.why(t, h) // not yet in the cache
				h.reconcile(t, 1)
				want := 3
				if !liveRead && !c.lockedToo {
					want = 6 // the race the live read closes
				}
				if h.server.creates != want {
					t.Errorf("%d creates, want %d", h.server.creates, want)
				}
			})
		}
	}
}

// TestLiveReadAllowsCreationsOfARunningWorkload: the live read does not get
// in the way of a Training workload that runs.
func TestLiveReadAllowsCreationsOfARunningWorkload(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(3))
	h.r.APIReader = h.server
	h.reconcile(t, 1)
	if h.server.creates != 3 {
		t.Errorf("%d creates, want 3", h.server.creates)
	}
}

// TestTrainingFailureBeforeAvailabilityIsABreach: a Training pod that fails
// while its clique is still starting is not replaced (too few healthy pods
// remain) and the clique reports MinAvailableBreached=True at once, which
// lets the PodCliqueSet controller restart the replica.
func TestTrainingFailureBeforeAvailabilityIsABreach(t *testing.T) {
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), testfixtures.StandaloneClique(2))
	h.reconcile(t, 1)
	h.cache.catchUp(t)
	h.reconcile(t, 1)
	if c := meta.FindStatusCondition(h.podClique(t).Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached); c.Status != metav1.ConditionUnknown {
		t.Fatalf("MinAvailableBreached %+v while starting, want Unknown", c)
	}
	h.setPodStatus(t, 1, exitWith(3))
	h.cache.catchUp(t)
	h.reconcile(t, 2)
	if h.server.creates != 2 || h.server.totalDeletes() != 0 {
		t.Errorf("%d creates, %d deletes; want 2 and 0: the failed pod stays", h.server.creates, h.server.totalDeletes())
	}
	c := meta.FindStatusCondition(h.podClique(t).Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	if c.Status != metav1.ConditionTrue || c.Reason != ConditionReasonPodsFailed ||
		c.Message[:len("1 pod failed: index 1 (container main exited 3)")] != "1 pod failed: index 1 (container main exited 3)" {
		t.Errorf("MinAvailableBreached %+v, want True (PodsFailed) naming index 1 and exit code 3", c)
	}
}

// TestPodsCarryTheAttemptOfTheirPodClique: the PodCliqueSet controller
// labels the PodCliques of a restarted replica with the attempt; their pods
// carry it.
func TestPodsCarryTheAttemptOfTheirPodClique(t *testing.T) {
	pclq := testfixtures.StandaloneClique(2)
	pclq.Labels[labels.AttemptKey] = "2"
	h := newHarness(t, false, testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining), pclq)
	h.reconcile(t, 1)
	alive, _ := h.server.pods(t)
	if len(alive) != 2 {
		t.Fatalf("%d pods, want 2", len(alive))
	}
	for _, pod := range alive {
		if got := pod.Labels[labels.AttemptKey]; got != "2" {
			t.Errorf("pod %s: %s=%q, want 2", pod.Name, labels.AttemptKey, got)
		}
	}
}

// podAt returns the pod at index from the API server.
func (h *harness) podAt(t *testing.T, index int) *corev1.Pod {
	t.Helper()
	alive, terminating := h.server.pods(t)
	for _, pod := range append(alive, terminating...) {
		if pod.Labels[labels.PodIndexKey] == strconv.Itoa(index) {
			return &pod
		}
	}
	t.Fatalf("no pod at index %d", index)
	return nil
}
