package lifecycle

import (
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/podstate"
)

// FuzzCliqueCompletion merges any record (status.succeededIndexes, any
// string, and status.lastSucceededTime) with any pods. The result holds
// only indices below replicas, each recorded or shown by a pod that exited
// 0; it keeps every such index; it is complete exactly when it holds all
// replicas indices; and written back as the record it reads the same, with
// or without the pods: an index that exited 0 is never lost once recorded.
//
// recordedLast is seconds after t0, or no time when negative.
func FuzzCliqueCompletion(f *testing.F) {
	ok, run, bad := corev1.PodSucceeded, corev1.PodRunning, corev1.PodFailed
	// The inputs of TestCliqueCompletion.
	seeds := []struct {
		replicas     int
		recorded     string
		recordedLast int64
		pods         []podstate.Summary
	}{
		{3, "", -1, []podstate.Summary{pod(0, ok, t0), pod(1, ok, t0.Add(time.Minute)), pod(2, ok, t0)}},
		{3, "", -1, []podstate.Summary{pod(0, ok, t0), pod(1, run, time.Time{}), pod(2, ok, t0)}},
		{2, "", -1, []podstate.Summary{pod(0, ok, t0), pod(1, bad, t0)}},
		{2, "1", 3600, []podstate.Summary{pod(0, ok, t0)}},
		{2, "", -1, []podstate.Summary{pod(0, ok, t0), pod(0, ok, t0)}},
		{2, "5", -1, []podstate.Summary{pod(0, ok, t0), pod(2, ok, t0)}},
		{1, "", -1, []podstate.Summary{{Name: "x", Phase: ok}}},
		{1, "x-1", -1, []podstate.Summary{pod(0, ok, t0)}},
		{0, "", -1, nil},
	}
	for _, s := range seeds {
		f.Add(s.replicas, s.recorded, s.recordedLast, fuzzinput.EncodePods(s.pods, t0))
	}
	f.Fuzz(func(t *testing.T, replicas int, recorded string, recordedLastSeconds int64, podBytes []byte) {
		// A clique's replicas are an int32.
		replicas = int(int32(replicas))
		pods := fuzzinput.New(podBytes).Pods(32, t0)
		var recordedLast *metav1.Time
		if recordedLastSeconds >= 0 {
			recordedLast = &metav1.Time{Time: t0.Add(time.Duration(recordedLastSeconds%(1<<32)) * time.Second)}
		}

		var c Completion
		fuzzinput.RunBounded(fmt.Sprintf("CliqueCompletion(%d, %q, ...)", replicas, recorded), func() {
			c = CliqueCompletion(replicas, recorded, recordedLast, pods)
		})

		shownByPods := indexset.Set{}
		for _, p := range pods {
			if p.Succeeded() && p.HasIndex && p.Index < replicas {
				shownByPods.Add(p.Index)
				if c.LastSucceeded.Before(p.FinishedAt) {
					t.Fatalf("LastSucceeded %v is before pod %s finished at %v", c.LastSucceeded, p.Name, p.FinishedAt)
				}
			}
		}
		record, recordErr := indexset.Parse(recorded, replicas)
		for i := range c.Succeeded {
			if i < 0 || i >= replicas {
				t.Fatalf("succeeded index %d outside [0, %d)", i, replicas)
			}
			if !shownByPods.Has(i) && (recordErr != nil || !record.Has(i)) {
				t.Fatalf("succeeded index %d is neither recorded in %q nor shown by a pod", i, recorded)
			}
		}
		for i := range shownByPods {
			if !c.Succeeded.Has(i) {
				t.Fatalf("index %d, whose pod exited 0, is missing from %v", i, c.Succeeded)
			}
		}
		if recordErr == nil {
			for i := range record {
				if i < replicas && !c.Succeeded.Has(i) {
					t.Fatalf("recorded index %d of %q is lost: %v", i, recorded, c.Succeeded)
				}
			}
		}
		if want := replicas > 0 && len(c.Succeeded) == replicas; c.Complete != want {
			t.Fatalf("Complete = %v with %d of %d indices", c.Complete, len(c.Succeeded), replicas)
		}
		if recordedLast != nil && c.LastSucceeded.Before(recordedLast.Time) {
			t.Fatalf("LastSucceeded %v is before the recorded %v", c.LastSucceeded, recordedLast.Time)
		}

		// Written back as the record, the completion reads the same, even
		// once the pods are gone.
		var writtenLast *metav1.Time
		if !c.LastSucceeded.IsZero() {
			writtenLast = &metav1.Time{Time: c.LastSucceeded}
		}
		for _, withPods := range [][]podstate.Summary{pods, nil} {
			again := CliqueCompletion(replicas, c.Succeeded.String(), writtenLast, withPods)
			if !maps.Equal(again.Succeeded, c.Succeeded) || again.Complete != c.Complete || !again.LastSucceeded.Equal(c.LastSucceeded) {
				t.Fatalf("read back from its record (%d pods) the completion %+v became %+v", len(withPods), c, again)
			}
		}
	})
}

// FuzzMayCreatePods reads the replica state of any PodCliqueSet and asker.
// A replica may get pods exactly when its PodCliqueSet is known, not being
// deleted, not ended, the replica is not being recreated and the asker is
// not of an earlier run; a refusal gives the reason that holds. With one
// recreation entry per replica (as mergeRecreations keeps them), an object
// of the replica's current run (Records.Attempt) is never superseded, one of
// an earlier run always is.
//
// Each recreation is three bytes: replica (modulo 4), attempt (modulo 5),
// completed (low bit). The bytes after them suspend, set SuccessCriteriaMet
// and set an Admitted condition (True or False), one each.
func FuzzMayCreatePods(f *testing.F) {
	training, inference := string(copsev1alpha1.WorkloadTypeTraining), string(copsev1alpha1.WorkloadTypeInference)
	recreating, recreated := []byte{1, 2, 0}, []byte{1, 2, 1}
	// The inputs of TestMayCreatePods.
	seeds := []struct {
		missing, deleting bool
		workload, phase   string
		failed            string // status of the Failed condition, "" for none
		recreations       []byte
		replica, attempt  int
	}{
		{workload: training, phase: "Running"},
		{workload: training},
		{workload: training, phase: "Succeeded"},
		{workload: training, phase: "Failed"},
		{workload: training, phase: "Running", failed: "True"},
		{workload: training, failed: "False"},
		{workload: inference, phase: "Failed", failed: "True"},
		{phase: "Succeeded"},
		{missing: true},
		{workload: inference, deleting: true},
		{workload: training, recreations: recreating, replica: 1, attempt: 2},
		{workload: training, recreations: recreating, replica: 0},
		{workload: training, recreations: recreated, replica: 1, attempt: 1},
		{workload: training, recreations: recreated, replica: 1, attempt: 2},
		{workload: training, recreations: recreated, replica: 1, attempt: -1},
		// A byte after the recreations' triples suspends; a second one
		// sets SuccessCriteriaMet.
		{workload: training, phase: "Running", recreations: []byte{1}},
		{workload: inference, recreations: []byte{1}},
		{workload: training, recreations: []byte{1, 2, 0, 1}, replica: 1, attempt: 2},
		{workload: training, phase: "Running", recreations: []byte{0, 1}},
	}
	for _, s := range seeds {
		f.Add(s.missing, s.deleting, s.workload, s.phase, s.failed, s.recreations, s.replica, s.attempt)
	}
	f.Fuzz(func(t *testing.T, missing, deleting bool, workload, phase, failed string, recreations []byte, replica, attempt int) {
		var pcs *copsev1alpha1.PodCliqueSet
		unique := true
		if !missing {
			pcs = &copsev1alpha1.PodCliqueSet{}
			pcs.Spec.WorkloadType = copsev1alpha1.WorkloadType(workload)
			pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhase(phase)
			if failed != "" {
				pcs.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionStatus(failed)}}
			}
			if deleting {
				pcs.DeletionTimestamp = &metav1.Time{Time: t0}
			}
			src, seen := fuzzinput.New(recreations), map[int32]bool{}
			for range len(recreations) / 3 {
				rec := copsev1alpha1.ReplicaRecreation{ReplicaIndex: int32(src.Intn(4)), Attempt: int32(src.Intn(5))}
				if src.Bool() {
					rec.CompletedAt = &metav1.Time{Time: t0}
				}
				unique = unique && !seen[rec.ReplicaIndex]
				seen[rec.ReplicaIndex] = true
				pcs.Status.ReplicaRecreations = append(pcs.Status.ReplicaRecreations, rec)
			}
			pcs.Spec.Suspend = ptr.To(src.Bool())
			if src.Bool() {
				pcs.Status.Conditions = append(pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue})
			}
			if src.Bool() {
				pcs.Status.Conditions = append(pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted,
					Status: fuzzinput.Pick(src, metav1.ConditionTrue, metav1.ConditionFalse)})
			}
		}

		s := ReplicaStateOf(pcs, replica, attempt)
		reason := MayCreatePods(s)
		allowed := s.Known && !s.Deleting && !s.Ended && !s.Succeeded && !s.Suspended && !s.Recreating && !s.Superseded
		if (reason == "") != allowed {
			t.Fatalf("MayCreatePods(%+v) = %q", s, reason)
		}
		if holds := map[Reason]bool{
			"":                    true,
			ReasonUnknownWorkload: !s.Known,
			ReasonDeleting:        s.Deleting,
			ReasonEnded:           s.Ended,
			ReasonSucceeded:       s.Succeeded,
			ReasonNotAdmitted:     s.AwaitingAdmission,
			ReasonSuspended:       s.Suspended,
			ReasonRecreating:      s.Recreating,
			ReasonSuperseded:      s.Superseded,
		}; !holds[reason] {
			t.Fatalf("MayCreatePods(%+v) gives reason %q, which does not hold", s, reason)
		}
		if reason.Message() == "" && reason != "" {
			t.Fatalf("reason %q has no message", reason)
		}
		if s.AwaitingAdmission && !s.Suspended {
			t.Fatalf("waits for Kueue's admission without being suspended: %+v", s)
		}
		if pcs == nil {
			if s.Known {
				t.Fatalf("a missing PodCliqueSet is known: %+v", s)
			}
			return
		}
		successMet := meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
		wantEnded := pcs.IsTraining() && (pcs.Status.Phase.IsTerminal() || failed == string(metav1.ConditionTrue) || successMet)
		if s.Ended != wantEnded {
			t.Fatalf("Ended = %v for workload %q phase %q Failed=%q SuccessCriteriaMet=%v", s.Ended, workload, phase, failed, successMet)
		}
		if s.Suspended != *pcs.Spec.Suspend {
			t.Fatalf("Suspended = %v with spec.suspend %v", s.Suspended, *pcs.Spec.Suspend)
		}
		wantRecreating := false
		for _, rec := range pcs.Status.ReplicaRecreations {
			wantRecreating = wantRecreating || (int(rec.ReplicaIndex) == replica && rec.CompletedAt == nil)
		}
		if s.Recreating != wantRecreating {
			t.Fatalf("Recreating = %v for replica %d of %+v", s.Recreating, replica, pcs.Status.ReplicaRecreations)
		}
		var wantAttempt int32 = -1 // the first entry of the replica names its attempt
		for _, rec := range pcs.Status.ReplicaRecreations {
			if int(rec.ReplicaIndex) == replica && wantAttempt < 0 {
				wantAttempt = rec.Attempt
			}
		}
		if got := RecordsOf(pcs).Attempt(replica); got != max(wantAttempt, 0) {
			t.Fatalf("the records' current attempt of replica %d is %d, the status says %d", replica, got, max(wantAttempt, 0))
		}
		if !unique {
			return
		}
		current := int(RecordsOf(pcs).Attempt(replica))
		if wantSuperseded := attempt >= 0 && attempt < current; s.Superseded != wantSuperseded {
			t.Fatalf("Superseded = %v for attempt %d of replica %d, whose current attempt is %d", s.Superseded, attempt, replica, current)
		}
		if cur := ReplicaStateOf(pcs, replica, current); cur.Superseded {
			t.Fatalf("an object of the current attempt %d of replica %d is superseded", current, replica)
		}
	})
}

// FuzzReplacementBackoff: the back-off is 10s before the first
// replacement, doubles with each one, is at most 6 minutes, and never
// shrinks as replacements grow.
func FuzzReplacementBackoff(f *testing.F) {
	for _, seed := range [][2]int32{{0, 1}, {2, 3}, {5, 6}, {-1, 40}, {7, 1 << 30}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b int32) {
		lo, hi := min(a, b), max(a, b)
		for _, n := range []int32{lo, hi} {
			got := ReplacementBackoff(n)
			want := ReplacementBackoffCap
			if n < 6 {
				want = min(ReplacementBackoffBase<<max(n, 0), ReplacementBackoffCap)
			}
			if got != want {
				t.Fatalf("ReplacementBackoff(%d) = %s, want %s", n, got, want)
			}
		}
		if ReplacementBackoff(lo) > ReplacementBackoff(hi) {
			t.Fatalf("ReplacementBackoff(%d) = %s > ReplacementBackoff(%d) = %s", lo, ReplacementBackoff(lo), hi, ReplacementBackoff(hi))
		}
	})
}
