package podclique

import (
	"strings"
	"testing"
	"time"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

var (
	inferenceWorkload = workloadState{known: true, workload: copsev1alpha1.WorkloadTypeInference}
	trainingWorkload  = workloadState{known: true, workload: copsev1alpha1.WorkloadTypeTraining}
)

// statusFor is computeStatus as the reconciler calls it when nothing is
// replaced: the Training completion from the clique's record and its pods.
func statusFor(pclq *copsev1alpha1.PodClique, pods []podstate.Summary, w workloadState, now metav1.Time) copsev1alpha1.PodCliqueStatus {
	var completion lifecycle.Completion
	if w.training() {
		completion = lifecycle.CliqueCompletion(int(pclq.Spec.Replicas), pclq.Status.SucceededIndexes, pclq.Status.LastSucceededTime, pods)
	}
	return computeStatus(pclq, statusInput{pods: pods, workload: w, completion: completion, now: now})
}

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
	pods := []podstate.Summary{
		p(0),                        // ready, scheduled
		p(1, notReady),              // scheduled
		p(2, unscheduled),           // pending
		p(3, gated),                 // pending, gated
		p(4, failed),                // ended: not counted
		p(5, succeeded),             // ended: not counted
		p(6, terminating),           // terminating: not counted
		p(7, terminating, notReady), // terminating: not counted
	}
	got := statusFor(pclq, pods, inferenceWorkload, metav1.Now())

	want := copsev1alpha1.PodCliqueStatus{PodCliqueStatus: grovecorev1alpha1.PodCliqueStatus{
		ObservedGeneration:    ptr.To[int64](4),
		Replicas:              4,
		ReadyReplicas:         1,
		ScheduledReplicas:     2,
		ScheduleGatedReplicas: 1,
		UpdatedReplicas:       3,
		Selector:              ptr.To("grove.io/podclique=llm-0-worker"),
	}}
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
	got := statusFor(pclq, []podstate.Summary{p(0), p(1)}, inferenceWorkload, metav1.Now())
	if c := meta.FindStatusCondition(got.Conditions, groveconstants.ConditionTypePodCliqueScheduled); c.Status != metav1.ConditionFalse {
		t.Errorf("2 of 3 scheduled with minAvailable unset: PodCliqueScheduled = %s, want False", c.Status)
	}
}

// TestBreachLifecycle walks one clique through start, availability, breach
// and recovery, checking that lastTransitionTime moves only with the status.
func TestBreachLifecycle(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // shadows the package t0: these steps count from 0
	at := func(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }
	steps := []struct {
		pods       []podstate.Summary
		now        metav1.Time
		wantStatus metav1.ConditionStatus
		wantReason string
		wantSince  metav1.Time
	}{
		{[]podstate.Summary{p(0, unscheduled), p(1, unscheduled)}, at(0), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podstate.Summary{p(0), p(1, notReady)}, at(1), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podstate.Summary{p(0), p(1)}, at(2), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(2)},
		{[]podstate.Summary{p(0), p(1)}, at(3), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(2)},
		{[]podstate.Summary{p(0), p(1, notReady)}, at(4), metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientReadyPods, at(4)},
		{[]podstate.Summary{p(0)}, at(5), metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientScheduledPods, at(4)},
		{[]podstate.Summary{p(0), p(1)}, at(6), metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, at(6)},
	}
	pclq := statusTestClique(2, nil)
	for i, s := range steps {
		pclq.Status = statusFor(pclq, s.pods, inferenceWorkload, s.now)
		c := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
		if c.Status != s.wantStatus || c.Reason != s.wantReason || !c.LastTransitionTime.Equal(&s.wantSince) {
			t.Fatalf("step %d: got %s (%s) since %s, want %s (%s) since %s",
				i, c.Status, c.Reason, c.LastTransitionTime.UTC(), s.wantStatus, s.wantReason, s.wantSince.UTC())
		}
	}
}

func TestComputeStatusWithoutPodCliqueSetKeepsConditions(t *testing.T) {
	pclq := statusTestClique(2, nil)
	pclq.Status.Conditions = []metav1.Condition{
		{Type: groveconstants.ConditionTypeMinAvailableBreached, Status: metav1.ConditionFalse, Reason: "Before"},
	}
	before := pclq.Status.DeepCopy()
	pods := []podstate.Summary{p(0, succeeded), p(1, failed)}
	got := computeStatus(pclq, statusInput{pods: pods, now: metav1.Now(),
		creation: decideCreation(creationState{replica: lifecycle.ReasonUnknownWorkload})})
	if diff := cmp.Diff(before.Conditions, got.Conditions); diff != "" {
		t.Errorf("conditions changed without knowing the workload type (-before +after):\n%s", diff)
	}
	if got.Replicas != 0 || ptr.Deref(got.ObservedGeneration, 0) != 4 {
		t.Errorf("counts not updated: %+v", got)
	}

	// A cause of the clique itself is written all the same: labels that do
	// not name the PodCliqueSet are why it is not found.
	got = computeStatus(pclq, statusInput{pods: pods, now: metav1.Now(),
		creation: decideCreation(creationState{invalidLabels: "label app.kubernetes.io/part-of is missing or not valid",
			replica: lifecycle.ReasonUnknownWorkload})})
	if c := meta.FindStatusCondition(got.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked); c == nil || c.Reason != copsev1alpha1.ReasonInvalidLabels {
		t.Errorf("PodCreationBlocked = %+v, want InvalidLabels", c)
	}
}

// TestTrainingStatusLifecycle walks a Training clique through start, work,
// completion and the removal of its pods: pods that exit 0 keep it
// available, Succeeded appears in the status computed from the pods that
// show it, and neither it nor the breach condition changes afterwards.
func TestTrainingStatusLifecycle(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // shadows the package t0: these steps count from 0
	at := func(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }
	steps := []struct {
		name          string
		pods          []podstate.Summary
		now           metav1.Time
		wantBreach    metav1.ConditionStatus
		wantReason    string
		wantScheduled metav1.ConditionStatus
		wantSucceeded bool
		wantSince     metav1.Time // of Succeeded, when set
	}{
		{"starting", []podstate.Summary{p(0, unscheduled), p(1, unscheduled)}, at(0),
			metav1.ConditionUnknown, ConditionReasonNeverAvailable, metav1.ConditionFalse, false, metav1.Time{}},
		{"running", []podstate.Summary{p(0), p(1)}, at(1),
			metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, metav1.ConditionTrue, false, metav1.Time{}},
		{"one finished", []podstate.Summary{p(0, succeeded), p(1)}, at(2),
			metav1.ConditionFalse, groveconstants.ConditionReasonSufficientReadyPods, metav1.ConditionTrue, false, metav1.Time{}},
		{"all finished", []podstate.Summary{p(0, succeeded), p(1, succeeded)}, at(3),
			metav1.ConditionFalse, copsev1alpha1.ReasonAllPodsSucceeded, metav1.ConditionTrue, true, at(3)},
		{"pods garbage collected: the record still says so", nil, at(4),
			metav1.ConditionFalse, copsev1alpha1.ReasonAllPodsSucceeded, metav1.ConditionTrue, true, at(3)},
		{"a stray pod failed", []podstate.Summary{p(0, failed)}, at(5),
			metav1.ConditionFalse, copsev1alpha1.ReasonAllPodsSucceeded, metav1.ConditionTrue, true, at(3)},
	}
	pclq := statusTestClique(2, nil)
	var firstSucceeded *metav1.Condition
	for _, s := range steps {
		pclq.Status = statusFor(pclq, s.pods, trainingWorkload, s.now)
		breached := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
		if breached.Status != s.wantBreach || breached.Reason != s.wantReason {
			t.Errorf("%s: MinAvailableBreached %s (%s), want %s (%s)", s.name, breached.Status, breached.Reason, s.wantBreach, s.wantReason)
		}
		if c := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypePodCliqueScheduled); c.Status != s.wantScheduled {
			t.Errorf("%s: PodCliqueScheduled %s, want %s", s.name, c.Status, s.wantScheduled)
		}
		succeeded := meta.FindStatusCondition(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)
		if (succeeded != nil) != s.wantSucceeded {
			t.Fatalf("%s: Succeeded %+v, want set: %v", s.name, succeeded, s.wantSucceeded)
		}
		if succeeded == nil {
			continue
		}
		if succeeded.Status != metav1.ConditionTrue || succeeded.Reason != copsev1alpha1.ReasonAllPodsSucceeded ||
			succeeded.Message != "all 2 pods exited 0" || !succeeded.LastTransitionTime.Equal(&s.wantSince) {
			t.Errorf("%s: Succeeded %+v", s.name, succeeded)
		}
		if firstSucceeded == nil {
			firstSucceeded = succeeded.DeepCopy()
			pclq.Generation++ // a later generation must not touch the condition either
		} else if diff := cmp.Diff(firstSucceeded, succeeded); diff != "" {
			t.Errorf("%s: Succeeded changed (-first +now):\n%s", s.name, diff)
		}
	}
}

// TestTrainingFailureBreachesAtOnce: a Training pod that fails while the
// clique is still starting is a breach from that moment, and stays one
// after the failed pod is gone.
func TestTrainingFailureBreachesAtOnce(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // shadows the package t0: these steps count from 0
	at := func(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }
	steps := []struct {
		pods       []podstate.Summary
		now        metav1.Time
		wantStatus metav1.ConditionStatus
		wantReason string
		wantSince  metav1.Time
	}{
		{[]podstate.Summary{p(0, unscheduled), p(1, unscheduled)}, at(0), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podstate.Summary{p(0), p(1, notReady)}, at(1), metav1.ConditionUnknown, ConditionReasonNeverAvailable, at(0)},
		{[]podstate.Summary{p(0), p(1, exitedWith(1, "Error"))}, at(2), metav1.ConditionTrue, ConditionReasonPodsFailed, at(2)},
		{[]podstate.Summary{p(0), p(1, exitedWith(1, "Error"), terminating)}, at(3), metav1.ConditionTrue, ConditionReasonPodsFailed, at(2)},
		{[]podstate.Summary{p(0)}, at(4), metav1.ConditionTrue, groveconstants.ConditionReasonInsufficientScheduledPods, at(2)},
	}
	pclq := statusTestClique(2, nil)
	for i, s := range steps {
		pclq.Status = statusFor(pclq, s.pods, trainingWorkload, s.now)
		c := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
		if c.Status != s.wantStatus || c.Reason != s.wantReason || !c.LastTransitionTime.Equal(&s.wantSince) {
			t.Fatalf("step %d: got %s (%s) since %s, want %s (%s) since %s",
				i, c.Status, c.Reason, c.LastTransitionTime.UTC(), s.wantStatus, s.wantReason, s.wantSince.UTC())
		}
		if s.wantReason == ConditionReasonPodsFailed && !strings.Contains(c.Message, "index 1 (container main exited 1, Error)") {
			t.Errorf("step %d: message %q does not name the failed pod", i, c.Message)
		}
	}
}

// TestTrainingRecords: the indices that exited 0 and the replacements are
// recorded in status, only grow, and survive the pods.
func TestTrainingRecords(t *testing.T) {
	pclq := statusTestClique(4, ptr.To[int32](2))
	first := t0.Add(-time.Hour)
	pods := []podstate.Summary{p(0, succeeded, finishedAt(first)), p(1, succeeded, finishedAt(first.Add(time.Minute))), p(2), p(3, failed)}
	completion := lifecycle.CliqueCompletion(4, "", nil, pods)
	got := computeStatus(pclq, statusInput{pods: pods, workload: trainingWorkload, completion: completion, replaced: pods[3:], now: metav1.NewTime(t0)})
	if got.SucceededIndexes != "0-1" || !got.LastSucceededTime.Time.Equal(first.Add(time.Minute)) {
		t.Errorf("succeeded %q at %v", got.SucceededIndexes, got.LastSucceededTime)
	}
	if got.PodReplacements != 1 || !cmp.Equal(got.ReplacingPods, []types.UID{"uid-3"}) {
		t.Errorf("replacements %d replacing %v, want 1 [uid-3]", got.PodReplacements, got.ReplacingPods)
	}

	pclq.Status = got
	next := statusFor(pclq, []podstate.Summary{p(2)}, trainingWorkload, metav1.NewTime(t0))
	if next.SucceededIndexes != "0-1" || next.PodReplacements != 1 || next.ReplacingPods != nil {
		t.Errorf("after the pods are gone: succeeded %q replacements %d replacing %v; want the records kept and the replaced pod dropped",
			next.SucceededIndexes, next.PodReplacements, next.ReplacingPods)
	}
}

func TestUpdateStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	started := metav1.NewTime(now.Add(-time.Minute))
	pod := func(hash string, ready bool) podstate.Summary {
		return podstate.Summary{TemplateHash: hash, Ready: ready, Phase: "Running"}
	}
	clique := func(label string) *copsev1alpha1.PodClique {
		c := &copsev1alpha1.PodClique{}
		c.Labels = map[string]string{labels.PodTemplateHashKey: label}
		c.Spec.Replicas, c.Spec.MinAvailable = 2, ptr.To[int32](2)
		return c
	}
	tests := []struct {
		name     string
		label    string
		previous copsev1alpha1.PodCliqueStatus
		template templateState
		pods     []podstate.Summary
		// want
		updated           int32
		currentTemplate   string // "" for unset
		currentGeneration string
		progress          *grovecorev1alpha1.PodCliqueUpdateProgress
	}{
		{
			name: "a new clique whose pods all run its template realises the generation", label: "t1",
			template: templateState{known: true, generationHash: "g1", templateHash: "t1"},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", false)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
		},
		{
			name: "a new generation starts an update; old pods keep it open", label: "t2",
			previous: withCurrent("t1", "g1"),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t1", true), pod("t2", true)},
			updated:  1, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "the update ends once every pod runs the template and minAvailable are ready", label: "t2",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t2", true), pod("t2", true)},
			updated:  2, currentTemplate: "t2", currentGeneration: "g2",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, UpdateEndedAt: &now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "not before the new pods are ready", label: "t2",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t2", true), pod("t2", false)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "nor while the PodClique has not taken its template", label: "t1",
			previous: withProgress(withCurrent("t1", "g1"), &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t1"}),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2"},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", true)},
			updated:  2, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: started, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t1"},
		},
		{
			name: "OnDelete ends the update as it starts", label: "t2",
			previous: withCurrent("t1", "g1"),
			template: templateState{known: true, generationHash: "g2", templateHash: "t2", onDelete: true},
			pods:     []podstate.Summary{pod("t1", true), pod("t1", true)},
			updated:  0, currentTemplate: "t1", currentGeneration: "g1",
			progress: &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, UpdateEndedAt: &now, PodCliqueSetGenerationHash: "g2", PodTemplateHash: "t2"},
		},
		{
			name: "terminating and ended pods are not counted", label: "t1",
			template: templateState{known: true, generationHash: "g1", templateHash: "t1"},
			pods:     []podstate.Summary{pod("t1", true), {TemplateHash: "t0", Terminating: true}, {TemplateHash: "t0", Phase: "Failed"}},
			updated:  1, currentTemplate: "t1", currentGeneration: "g1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := *tt.previous.DeepCopy()
			updateStatus(&status, clique(tt.label), tt.template, tt.pods, now)
			if status.UpdatedReplicas != tt.updated {
				t.Errorf("updatedReplicas %d, want %d", status.UpdatedReplicas, tt.updated)
			}
			if got := ptr.Deref(status.CurrentPodTemplateHash, ""); got != tt.currentTemplate {
				t.Errorf("currentPodTemplateHash %q, want %q", got, tt.currentTemplate)
			}
			if got := ptr.Deref(status.CurrentPodCliqueSetGenerationHash, ""); got != tt.currentGeneration {
				t.Errorf("currentPodCliqueSetGenerationHash %q, want %q", got, tt.currentGeneration)
			}
			if !progressEqual(status.UpdateProgress, tt.progress) {
				t.Errorf("updateProgress %+v, want %+v", status.UpdateProgress, tt.progress)
			}
		})
	}
}

func withCurrent(template, generation string) copsev1alpha1.PodCliqueStatus {
	var s copsev1alpha1.PodCliqueStatus
	s.CurrentPodTemplateHash, s.CurrentPodCliqueSetGenerationHash = ptr.To(template), ptr.To(generation)
	return s
}

func withProgress(s copsev1alpha1.PodCliqueStatus, p *grovecorev1alpha1.PodCliqueUpdateProgress) copsev1alpha1.PodCliqueStatus {
	s.UpdateProgress = p
	return s
}

func progressEqual(a, b *grovecorev1alpha1.PodCliqueUpdateProgress) bool {
	if a == nil || b == nil {
		return a == b
	}
	endA, endB := a.UpdateEndedAt, b.UpdateEndedAt
	return a.UpdateStartedAt.Equal(&b.UpdateStartedAt) && (endA == nil) == (endB == nil) && (endA == nil || endA.Equal(endB)) &&
		a.PodCliqueSetGenerationHash == b.PodCliqueSetGenerationHash && a.PodTemplateHash == b.PodTemplateHash
}
