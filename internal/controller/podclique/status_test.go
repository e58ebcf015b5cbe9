package podclique

import (
	"testing"
	"time"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func statusTestClique(replicas int32, minAvailable *int32) *copsev1alpha1.PodClique {
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-0-worker", Namespace: "ml", Generation: 4},
		Spec:       grovecorev1alpha1.PodCliqueSpec{Replicas: replicas, MinAvailable: minAvailable},
	}
}

func TestComputeStatusCounts(t *testing.T) {
	pclq := statusTestClique(6, ptr.To[int32](2))
	pclq.Status.UpdatedReplicas = 3
	pclq.Status.Conditions = []metav1.Condition{{Type: "SomethingElse", Status: metav1.ConditionTrue, Reason: "Kept"}}
	pods := []podInfo{
		p(0),                        // ready, scheduled
		p(1, notReady),              // scheduled
		p(2, unscheduled),           // pending
		p(3, gated),                 // pending, gated
		p(4, failed),                // ended: not counted
		p(5, succeeded),             // ended: not counted
		p(6, terminating),           // terminating: not counted
		p(7, terminating, notReady), // terminating: not counted
	}
	got := computeStatus(pclq, pods, metav1.Now())

	want := grovecorev1alpha1.PodCliqueStatus{
		ObservedGeneration:    ptr.To[int64](4),
		Replicas:              4,
		ReadyReplicas:         1,
		ScheduledReplicas:     2,
		ScheduleGatedReplicas: 1,
		UpdatedReplicas:       3,
		Selector:              ptr.To("grove.io/podclique=llm-0-worker"),
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Conditions" }, cmp.Ignore())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if meta.FindStatusCondition(got.Conditions, "SomethingElse") == nil {
		t.Error("a condition of another type was dropped")
	}
	scheduled := meta.FindStatusCondition(got.Conditions, groveconstants.ConditionTypePodCliqueScheduled)
	if scheduled == nil || scheduled.Status != metav1.ConditionTrue || scheduled.ObservedGeneration != 4 {
		t.Errorf("PodCliqueScheduled = %+v, want True at generation 4", scheduled)
	}
	breached := meta.FindStatusCondition(got.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	if breached == nil || breached.Status != metav1.ConditionUnknown {
		t.Errorf("MinAvailableBreached = %+v, want Unknown (1 ready of 2: never available)", breached)
	}
}

func TestComputeStatusMinAvailableDefaultsToReplicas(t *testing.T) {
	pclq := statusTestClique(3, nil)
	got := computeStatus(pclq, []podInfo{p(0), p(1)}, metav1.Now())
	if c := meta.FindStatusCondition(got.Conditions, groveconstants.ConditionTypePodCliqueScheduled); c.Status != metav1.ConditionFalse {
		t.Errorf("2 of 3 scheduled with minAvailable unset: PodCliqueScheduled = %s, want False", c.Status)
	}
}

// TestBreachLifecycle walks one clique through start, availability, breach
// and recovery, checking that lastTransitionTime moves only with the status.
func TestBreachLifecycle(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }
	steps := []struct {
		pods       []podInfo
		now        metav1.Time
		wantStatus metav1.ConditionStatus
		wantReason string
		wantSince  metav1.Time
	}{
		{[]podInfo{p(0, unscheduled), p(1, unscheduled)}, at(0), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podInfo{p(0), p(1, notReady)}, at(1), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podInfo{p(0), p(1)}, at(2), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(2)},
		{[]podInfo{p(0), p(1)}, at(3), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(2)},
		{[]podInfo{p(0), p(1, notReady)}, at(4), metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientReadyPods, at(4)},
		{[]podInfo{p(0)}, at(5), metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientScheduledPods, at(4)},
		{[]podInfo{p(0), p(1)}, at(6), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(6)},
	}
	pclq := statusTestClique(2, nil)
	for i, s := range steps {
		pclq.Status = computeStatus(pclq, s.pods, s.now)
		c := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
		if c.Status != s.wantStatus || c.Reason != s.wantReason || !c.LastTransitionTime.Equal(&s.wantSince) {
			t.Fatalf("step %d: got %s (%s) since %s, want %s (%s) since %s",
				i, c.Status, c.Reason, c.LastTransitionTime.UTC(), s.wantStatus, s.wantReason, s.wantSince.UTC())
		}
	}
}
