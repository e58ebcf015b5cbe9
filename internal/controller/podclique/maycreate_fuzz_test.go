package podclique

import (
	"testing"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// creationStateOf builds a creationState from fuzz bytes: one choice per
// cause, the planned count, and the refusal record's times as offsets of up
// to about 18 hours from t0 in milliseconds (since, last) and from last
// (now), so every order of the three comes up.
func creationStateOf(data []byte) creationState {
	src := fuzzinput.New(data)
	replicaReasons := []lifecycle.Reason{"", lifecycle.ReasonUnknownWorkload, lifecycle.ReasonDeleting, lifecycle.ReasonEnded,
		lifecycle.ReasonSucceeded, lifecycle.ReasonNotAdmitted, lifecycle.ReasonSuspended, lifecycle.ReasonSuperseded, lifecycle.ReasonRecreating}
	s := creationState{
		going:    src.Maybe(4),
		replica:  fuzzinput.Pick(src, replicaReasons...),
		complete: src.Maybe(4),
		planned:  src.Intn(4),
	}
	if src.Maybe(4) {
		s.invalidLabels = "label app.kubernetes.io/part-of is missing or not valid"
	}
	for range src.Intn(3) {
		s.waitingForSuccess = append(s.waitingForSuccess, "init")
	}
	for range src.Intn(8) {
		s.waitingForClaims = append(s.waitingForClaims, "claim")
	}
	if src.Maybe(3) {
		s.waitingForBaseGang = "llm-0"
	}
	offset := func() time.Duration { return time.Duration(int32(src.Uint16())<<10) * time.Millisecond }
	if src.Bool() {
		s.refusal = refusalRecord{refused: true, since: t0.Add(offset()), loosened: src.Maybe(4)}
		s.refusal.last = s.refusal.since.Add(offset())
		if src.Maybe(4) {
			s.refusal.last = s.refusal.since.Add(-offset())
		}
	}
	s.now = s.refusal.last.Add(offset() - 32*time.Second)
	return s
}

// FuzzDecideCreation: the answer holds for any state.
//   - A reason comes with a message, and the reason is the first cause that
//     holds, in decideCreation's order.
//   - The plan is held exactly when a cause of the first gather step holds
//     (planHeld), and then nothing is created and nothing rechecked.
//   - Pods are created only when nothing holds them back, or the refusal
//     back-off ran out (or the quota changed), never during it; with no
//     cause they are.
//   - A recheck is asked only with pods to create and none created, and a
//     back-off is never longer than the cap after the latest refusal.
//   - Time only lets pods go: what may be created now may be later.
func FuzzDecideCreation(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {0}, {1, 0, 1, 2}, {0, 0, 0, 3, 1, 0, 7, 0, 0, 1},
		{1, 5, 1, 1, 1, 1, 1, 1, 1, 0, 9, 0, 4, 0, 0, 4},
		{1, 1, 1, 3, 1, 0, 0, 1, 1, 0, 64, 0, 32, 0, 16},
		{1, 1, 1, 2, 1, 0, 0, 1, 1, 200, 1, 200, 1, 1, 40, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := creationStateOf(data)
		d := decideCreation(s)

		if (d.reason == "") != (d.message == "") {
			t.Fatalf("reason %q with message %q", d.reason, d.message)
		}
		causes := []struct {
			holds  bool
			reason string
		}{
			{s.going, copsev1alpha1.ReasonPodCliqueDeleting},
			{s.invalidLabels != "", copsev1alpha1.ReasonInvalidLabels},
			{s.replica != "", string(s.replica)},
			{s.complete, copsev1alpha1.ReasonAllPodsSucceeded},
			{len(s.waitingForSuccess) > 0, copsev1alpha1.ReasonWaitingForSucceeded},
			{len(s.waitingForClaims) > 0, copsev1alpha1.ReasonWaitingForResourceClaims},
			{s.waitingForBaseGang != "", copsev1alpha1.ReasonWaitingForBaseGang},
			{s.refusal.refused, copsev1alpha1.ReasonCreationRefused},
		}
		want := ""
		for _, c := range causes {
			if c.holds {
				want = c.reason
				break
			}
		}
		if d.reason != want {
			t.Fatalf("reason %q, want the first cause that holds, %q, for %+v", d.reason, want, s)
		}
		if d.planHeld != s.planHeld() {
			t.Fatalf("planHeld %v for a state whose first-step causes say %v", d.planHeld, s.planHeld())
		}
		if d.planHeld && (d.create || d.recheckAfter != 0) {
			t.Fatalf("a held plan creates %v or rechecks after %v", d.create, d.recheckAfter)
		}
		if d.create && d.reason != "" && d.reason != copsev1alpha1.ReasonCreationRefused {
			t.Fatalf("pods are created although %q holds them back", d.reason)
		}
		if d.reason == "" && (!d.create || d.recheckAfter != 0) {
			t.Fatalf("nothing holds the pods back, yet create %v, recheck after %v", d.create, d.recheckAfter)
		}
		if d.recheckAfter < 0 || (d.recheckAfter > 0 && (s.planned == 0 || d.create)) {
			t.Fatalf("recheck after %v with %d pods planned, create %v", d.recheckAfter, s.planned, d.create)
		}
		if retryAt := refusalRetryAt(s.refusal.since, s.refusal.last); d.reason == copsev1alpha1.ReasonCreationRefused && d.create &&
			!s.refusal.loosened && s.now.Before(retryAt) {
			t.Fatalf("a refused clique tries again at %s, before its back-off ends at %s", s.now, retryAt)
		}
		if d.reason == copsev1alpha1.ReasonCreationRefused && !d.create && !s.now.Before(s.refusal.last) &&
			d.recheckAfter > refusalBackoffCap {
			t.Fatalf("a back-off of %v after the latest refusal", d.recheckAfter)
		}
		if d.create {
			later := s
			later.now = s.now.Add(time.Duration(len(data)) * time.Second)
			if !decideCreation(later).create {
				t.Fatalf("pods may be created at %s but not later at %s", s.now, later.now)
			}
		}

		if rec := s.refusal; rec.refused && !rec.since.After(rec.last) {
			wait := refusalRetryAt(rec.since, rec.last).Sub(rec.last)
			if wait < refusalBackoffBase || wait > refusalBackoffCap {
				t.Fatalf("a wait of %v after refusals from %s to %s", wait, rec.since, rec.last)
			}
			if later := refusalRetryAt(rec.since, rec.last.Add(time.Second)); later.Before(refusalRetryAt(rec.since, rec.last)) {
				t.Fatalf("a later refusal lets the next try come earlier")
			}
		}
	})
}
