package podclique

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// TestDecideCreation: one row per cause, alone and against the causes after
// it (the first that holds wins), with what it does to the plan and to this
// pass's creations.
func TestDecideCreation(t *testing.T) {
	refused := refusalRecord{refused: true, since: t0.Add(-10 * time.Second), last: t0.Add(-2 * time.Second)}
	everything := func(s creationState) creationState {
		// Every cause after the ones a row sets, so the row's must win.
		s.complete = true
		s.waitingForSuccess = []string{"init"}
		s.waitingForClaims = []string{"llm-all-gpu"}
		s.waitingForBaseGang = "llm-0"
		s.refusal = refused
		s.planned = 2
		return s
	}
	cases := []struct {
		name       string
		state      creationState
		wantReason string
		wantHeld   bool
		wantCreate bool
		wantAfter  time.Duration
		wantIn     string // a part of the message
	}{
		{name: "nothing holds the pods back", state: creationState{planned: 3}, wantCreate: true},
		{name: "nothing to create, nothing holds", state: creationState{}, wantCreate: true},
		{name: "the PodClique is being deleted", state: everything(creationState{going: true, invalidLabels: "x", replica: lifecycle.ReasonSuspended}),
			wantReason: copsev1alpha1.ReasonPodCliqueDeleting, wantHeld: true, wantIn: "being deleted"},
		{name: "its labels do not identify it", state: everything(creationState{invalidLabels: "label copse.dev/clique is missing or not valid",
			replica: lifecycle.ReasonUnknownWorkload}),
			wantReason: copsev1alpha1.ReasonInvalidLabels, wantHeld: true, wantIn: "copse.dev/clique"},
		{name: "the replica is suspended", state: everything(creationState{replica: lifecycle.ReasonSuspended}),
			wantReason: string(lifecycle.ReasonSuspended), wantHeld: true, wantIn: "spec.suspend"},
		{name: "the replica waits for Kueue", state: everything(creationState{replica: lifecycle.ReasonNotAdmitted}),
			wantReason: string(lifecycle.ReasonNotAdmitted), wantHeld: true, wantIn: "Kueue"},
		{name: "the replica is being recreated", state: everything(creationState{replica: lifecycle.ReasonRecreating}),
			wantReason: string(lifecycle.ReasonRecreating), wantHeld: true, wantIn: "recreated"},
		{name: "the workload ended", state: everything(creationState{replica: lifecycle.ReasonEnded}),
			wantReason: string(lifecycle.ReasonEnded), wantHeld: true, wantIn: "ended"},
		{name: "the clique succeeded", state: everything(creationState{}),
			wantReason: copsev1alpha1.ReasonAllPodsSucceeded, wantHeld: true, wantIn: "succeeded"},
		{name: "waiting for cliques to succeed", state: func() creationState {
			s := everything(creationState{})
			s.complete = false
			return s
		}(), wantReason: copsev1alpha1.ReasonWaitingForSucceeded, wantHeld: true, wantIn: "init"},
		{name: "waiting for a claim", state: creationState{planned: 2, waitingForClaims: []string{"llm-all-gpu"}, waitingForBaseGang: "llm-0", refusal: refused},
			wantReason: copsev1alpha1.ReasonWaitingForResourceClaims, wantAfter: retryClaims, wantIn: "llm-all-gpu"},
		{name: "waiting for a claim with nothing to create asks for no recheck", state: creationState{waitingForClaims: []string{"llm-all-gpu"}},
			wantReason: copsev1alpha1.ReasonWaitingForResourceClaims, wantIn: "llm-all-gpu"},
		{name: "many claims: five are named", state: creationState{planned: 1, waitingForClaims: []string{"a", "b", "c", "d", "e", "f", "g"}},
			wantReason: copsev1alpha1.ReasonWaitingForResourceClaims, wantAfter: retryClaims, wantIn: "a, b, c, d, e and 2 more"},
		{name: "held for the base gang", state: creationState{planned: 2, waitingForBaseGang: "llm-0", refusal: refused},
			wantReason: copsev1alpha1.ReasonWaitingForBaseGang, wantAfter: retryBaseGang, wantIn: "llm-0"},
		{name: "refused, backing off", state: creationState{planned: 2, refusal: refused, now: t0},
			// 8s of refusals so far: the next try 9s after the last one.
			wantReason: copsev1alpha1.ReasonCreationRefused, wantAfter: 7 * time.Second, wantIn: "PodCreationRefused"},
		{name: "refused, the back-off ran out: one more try, still refused", state: creationState{planned: 2, refusal: refused, now: t0.Add(7 * time.Second)},
			wantReason: copsev1alpha1.ReasonCreationRefused, wantCreate: true, wantIn: "PodCreationRefused"},
		{name: "refused, the quota changed since: try at once", state: creationState{planned: 2, now: t0,
			refusal: refusalRecord{refused: true, since: refused.since, last: refused.last, loosened: true}},
			wantReason: copsev1alpha1.ReasonCreationRefused, wantCreate: true, wantIn: "PodCreationRefused"},
		{name: "refused with nothing to create asks for no recheck", state: creationState{refusal: refused, now: t0},
			wantReason: copsev1alpha1.ReasonCreationRefused, wantIn: "PodCreationRefused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideCreation(c.state)
			if got.reason != c.wantReason || got.planHeld != c.wantHeld || got.create != c.wantCreate || got.recheckAfter != c.wantAfter {
				t.Errorf("got reason %q held %v create %v recheck %v; want %q %v %v %v",
					got.reason, got.planHeld, got.create, got.recheckAfter, c.wantReason, c.wantHeld, c.wantCreate, c.wantAfter)
			}
			if !containsAll(got.message, c.wantIn) || (got.reason == "") != (got.message == "") {
				t.Errorf("message %q, want one with %q exactly when there is a reason", got.message, c.wantIn)
			}
			if got.planHeld != c.state.planHeld() {
				t.Errorf("planHeld %v, the state's %v", got.planHeld, c.state.planHeld())
			}
		})
	}
}

// TestRefusalRetryAt: each wait is one second longer than the refusals have
// lasted, at most a minute; so, with attempts on time, 1s, 2s, 4s, ...
func TestRefusalRetryAt(t *testing.T) {
	cases := []struct {
		name        string
		since, last time.Time
		want        time.Time
	}{
		{name: "the first refusal", since: t0, last: t0, want: t0.Add(time.Second)},
		{name: "the second, on time", since: t0, last: t0.Add(time.Second), want: t0.Add(3 * time.Second)},
		{name: "the third, on time", since: t0, last: t0.Add(3 * time.Second), want: t0.Add(7 * time.Second)},
		{name: "late attempts wait longer, never shorter", since: t0, last: t0.Add(5 * time.Second), want: t0.Add(11 * time.Second)},
		{name: "at most a minute", since: t0, last: t0.Add(time.Hour), want: t0.Add(time.Hour + time.Minute)},
		{name: "no time of the last refusal (an older status): the first", since: t0, want: t0.Add(time.Second)},
		{name: "the record reads backwards: the last refusal alone", since: t0.Add(time.Minute), last: t0, want: t0.Add(time.Second)},
		{name: "nothing recorded: at once", want: time.Time{}.Add(time.Second)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := refusalRetryAt(c.since, c.last); !got.Equal(c.want) {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestCreationBlockedCondition: True with the decision's reason, or False.
func TestCreationBlockedCondition(t *testing.T) {
	if c := creationBlockedCondition(creationDecision{create: true}); c.Status != metav1.ConditionFalse || c.Reason != copsev1alpha1.ReasonCreationAllowed {
		t.Errorf("no cause: %+v", c)
	}
	d := decideCreation(creationState{replica: lifecycle.ReasonSuspended})
	if c := creationBlockedCondition(d); c.Status != metav1.ConditionTrue || c.Reason != "Suspended" || c.Message != lifecycle.ReasonSuspended.Message() ||
		c.Type != copsev1alpha1.ConditionTypePodCreationBlocked {
		t.Errorf("suspended: %+v", c)
	}
}

// TestStatusAfterAttempt: a refusal starts the record (condition, time,
// PodCreationBlocked), a repeated one moves only the time, a creation that
// goes through ends it, and one with no refusal before changes nothing.
func TestStatusAfterAttempt(t *testing.T) {
	quota := "exceeded quota: pods"
	pclq := statusTestClique(3, nil)
	allowed := creationBlockedCondition(creationDecision{create: true})
	allowed.ObservedGeneration = pclq.Generation // as computeStatus wrote it
	pclq.Status.Conditions = []metav1.Condition{allowed}
	state := creationState{planned: 3}

	if _, changed := statusAfterAttempt(pclq, state, nil, t0); changed {
		t.Error("a creation with no refusal before changes the status")
	}

	first, changed := statusAfterAttempt(pclq, state, &quota, t0)
	refusedCond := meta.FindStatusCondition(first.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)
	blocked := meta.FindStatusCondition(first.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked)
	if !changed || refusedCond == nil || refusedCond.Status != metav1.ConditionTrue || !containsAll(refusedCond.Message, quota) ||
		first.LastPodCreationRefusalTime == nil || !first.LastPodCreationRefusalTime.Equal(&metav1.MicroTime{Time: t0}) ||
		blocked == nil || blocked.Status != metav1.ConditionTrue || blocked.Reason != copsev1alpha1.ReasonCreationRefused {
		t.Fatalf("after the first refusal: changed %v, %+v, blocked %+v, time %v", changed, refusedCond, blocked, first.LastPodCreationRefusalTime)
	}

	pclq.Status = first
	again, changed := statusAfterAttempt(pclq, state, &quota, t0.Add(time.Second))
	rec := refusalRecordOf(&again)
	if !changed || !rec.refused || !rec.since.Equal(t0) || !rec.last.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the second refusal: changed %v, record %+v", changed, rec)
	}
	if got := refusalRetryAt(rec.since, rec.last); !got.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("the next try at %s, want 2s after the second refusal", got)
	}

	pclq.Status = again
	accepted, changed := statusAfterAttempt(pclq, state, nil, t0.Add(5*time.Second))
	refusedCond = meta.FindStatusCondition(accepted.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)
	blocked = meta.FindStatusCondition(accepted.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked)
	if !changed || refusedCond.Status != metav1.ConditionFalse || accepted.LastPodCreationRefusalTime != nil ||
		blocked.Status != metav1.ConditionFalse || blocked.Reason != copsev1alpha1.ReasonCreationAllowed {
		t.Errorf("after a creation went through: changed %v, %+v, blocked %+v, time %v", changed, refusedCond, blocked, accepted.LastPodCreationRefusalTime)
	}
}

func ExampleReason_message() {
	fmt.Println(decideCreation(creationState{replica: lifecycle.ReasonRecreating}).message)
	// Output: the replica is being recreated; the previous run's pods are still going away
}
