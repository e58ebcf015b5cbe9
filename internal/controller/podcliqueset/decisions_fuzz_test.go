package podcliqueset

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// Flags of a replica in the fuzz input of decideTraining, and of the
// trainingInputs themselves.
const (
	flagBreached = 1 << iota
	flagSucceeded
	flagInProgress
	flagAvailable
	flagStarted
	// The two bits above the flags are the failure rules' verdict on the
	// replica's root cause (verdictActions).
	flagVerdictShift = iota
)

// verdictActions are the verdicts of the fuzz input: the default one (no
// rule), then a rule of each other action.
var verdictActions = []copsev1alpha1.FailureRuleAction{copsev1alpha1.FailureActionRestartReplica,
	copsev1alpha1.FailureActionRestartReplicaWithoutCount, copsev1alpha1.FailureActionFailWorkload, copsev1alpha1.FailureActionIgnore}

func verdictOf(flags byte) lifecycle.RuleVerdict {
	i := int(flags>>flagVerdictShift) & 3
	if i == 0 {
		return lifecycle.RuleVerdict{Action: verdictActions[0]}
	}
	return lifecycle.RuleVerdict{Rule: fmt.Sprintf("rule-%d", i), Action: verdictActions[i]}
}

const (
	inputHasMaxRuntime = 1 << iota
	inputHasStartTime
	inputFailing
	inputTerminal
	inputSuccessCriteriaMet
)

// timeUnit is the resolution of the replicas' times in the fuzz input.
const timeUnit = 10 * time.Second

// trainingFuzzInput is the fuzz input FuzzDecideTraining reads as
// trainingInputs: the replicas (see trainingInputsOf) and the scalars, the
// times as nanoseconds after t0.
type trainingFuzzInput struct {
	replicas                                []byte
	restartCount, maxRestarts               int32
	uncountedRestarts, maxUncounted         int32
	maxRuntime, startTime, terminationDelay int64
	now                                     int64
	flags                                   byte
}

// trainingInputsOf builds trainingInputs. Each replica is five bytes: its
// flags, then breachedSince and succeededAt as big-endian int16 multiples
// of timeUnit after t0. Replica i has index i, as assessReplicas numbers
// them.
func trainingInputsOf(f trainingFuzzInput) trainingInputs {
	in := trainingInputs{
		inProgress:           map[int]bool{},
		restartCount:         f.restartCount,
		maxRestarts:          f.maxRestarts,
		uncountedRestarts:    f.uncountedRestarts,
		maxUncountedRestarts: f.maxUncounted,
		terminationDelay:     time.Duration(f.terminationDelay),
		failing:              f.flags&inputFailing != 0,
		terminal:             f.flags&inputTerminal != 0,
		now:                  t0.Add(time.Duration(f.now)),

		successCriteriaMet: f.flags&inputSuccessCriteriaMet != 0,
	}
	if f.flags&inputHasMaxRuntime != 0 {
		d := time.Duration(f.maxRuntime)
		in.maxRuntime = &d
	}
	if f.flags&inputHasStartTime != 0 {
		at := t0.Add(time.Duration(f.startTime))
		in.startTime = &at
	}
	src := fuzzinput.New(f.replicas)
	for i := range len(f.replicas) / 5 {
		flags := src.Byte()
		breachedSince, succeededAt := int16(src.Uint16()), int16(src.Uint16())
		in.replicas = append(in.replicas, replicaAssessment{
			index:         i,
			breached:      flags&flagBreached != 0,
			breachedSince: t0.Add(time.Duration(breachedSince) * timeUnit),
			succeeded:     flags&flagSucceeded != 0,
			succeededAt:   t0.Add(time.Duration(succeededAt) * timeUnit),
			available:     flags&flagAvailable != 0,
			started:       flags&flagStarted != 0,
			verdict:       verdictOf(flags),
		})
		if flags&flagInProgress != 0 {
			in.inProgress[i] = true
		}
	}
	return in
}

// trainingSeed is the fuzz input trainingInputsOf reads back as in (its
// replicas' times rounded to timeUnit).
func trainingSeed(in trainingInputs) trainingFuzzInput {
	f := trainingFuzzInput{restartCount: in.restartCount, maxRestarts: in.maxRestarts,
		uncountedRestarts: in.uncountedRestarts, maxUncounted: in.maxUncountedRestarts,
		terminationDelay: int64(in.terminationDelay), now: int64(in.now.Sub(t0))}
	for _, flag := range []struct {
		set  bool
		flag byte
	}{{in.maxRuntime != nil, inputHasMaxRuntime}, {in.startTime != nil, inputHasStartTime}, {in.failing, inputFailing}, {in.terminal, inputTerminal},
		{in.successCriteriaMet, inputSuccessCriteriaMet}} {
		if flag.set {
			f.flags |= flag.flag
		}
	}
	if in.maxRuntime != nil {
		f.maxRuntime = int64(*in.maxRuntime)
	}
	if in.startTime != nil {
		f.startTime = int64(in.startTime.Sub(t0))
	}
	for _, r := range in.replicas {
		var flags byte
		for _, flag := range []struct {
			set  bool
			flag byte
		}{{r.breached, flagBreached}, {r.succeeded, flagSucceeded}, {in.inProgress[r.index], flagInProgress}, {r.available, flagAvailable}, {r.started, flagStarted}} {
			if flag.set {
				flags |= flag.flag
			}
		}
		flags |= byte(slices.Index(verdictActions, r.verdict.Action)) << flagVerdictShift
		breached, succeeded := uint16(int16(r.breachedSince.Sub(t0)/timeUnit)), uint16(int16(r.succeededAt.Sub(t0)/timeUnit))
		f.replicas = append(f.replicas, flags, byte(breached>>8), byte(breached), byte(succeeded>>8), byte(succeeded))
	}
	return f
}

// FuzzDecideTraining checks GREP-0285's lifecycle rules on any replicas,
// budget, clock and limits:
//
//   - a terminal or failing workload, or one whose success criteria are
//     met, gets no decision at all;
//   - a succeeded replica is never restarted;
//   - restartCount never decreases, grows by at most the number of
//     breached replicas not already being recreated, and stays within
//     maxRestarts unless it already exceeded it;
//   - a failure is MaxRestartsExceeded (the budget is spent) or
//     MaxRuntimeExceeded (the deadline passed), has a message, and restarts
//     nothing; otherwise each restart is counted, within the budget left;
//   - a restarted replica is breached, not already being recreated, its
//     breach lasted terminationDelay, and it is restarted once;
//   - the cause is -1 or such a replica;
//   - success in time is success: nothing is restarted or failed;
//   - requeueAfter is 0, or at least minRequeue.
func FuzzDecideTraining(f *testing.F) {
	for _, c := range decideTrainingCases() {
		s := trainingSeed(c.in)
		f.Add(s.replicas, s.restartCount, s.maxRestarts, s.uncountedRestarts, s.maxUncounted, s.maxRuntime, s.startTime, s.terminationDelay, s.now, s.flags)
	}
	f.Fuzz(func(t *testing.T, replicas []byte, restartCount, maxRestarts, uncountedRestarts, maxUncounted int32,
		maxRuntime, startTime, terminationDelay, now int64, flags byte) {
		if uncountedRestarts < 0 || uncountedRestarts > restartCount {
			// status.uncountedRestarts is a part of restartCount.
			return
		}
		in := trainingInputsOf(trainingFuzzInput{replicas, restartCount, maxRestarts, uncountedRestarts, maxUncounted,
			maxRuntime, startTime, terminationDelay, now, flags})
		d := decideTraining(in)
		checkFailureRules(t, in, d)

		if in.terminal || in.failing || in.successCriteriaMet {
			// After SuccessCriteriaMet nothing fails the workload, and no
			// restart is counted.
			if want := (trainingDecision{restartCount: in.restartCount, uncountedRestarts: in.uncountedRestarts, causeReplica: -1}); !reflect.DeepEqual(d, want) {
				t.Fatalf("a terminal, failing or succeeding workload got decision %+v", d)
			}
			return
		}
		isDue := func(r replicaAssessment) bool {
			return r.breached && !r.succeeded && !in.inProgress[r.index] && !r.breachedSince.Add(in.terminationDelay).After(in.now)
		}
		breached, due := 0, map[int]bool{}
		for _, r := range in.replicas {
			if r.breached && !r.succeeded && !in.inProgress[r.index] {
				breached++
			}
			if isDue(r) {
				due[r.index] = true
			}
		}
		if d.restartCount < in.restartCount || int64(d.restartCount)-int64(in.restartCount) > int64(breached) {
			t.Fatalf("restartCount went from %d to %d with %d breached replicas", in.restartCount, d.restartCount, breached)
		}
		if counted, before := d.restartCount-d.uncountedRestarts, in.restartCount-in.uncountedRestarts; counted > max(before, in.maxRestarts) {
			t.Fatalf("counted restarts went from %d to %d, beyond maxRestarts %d", before, counted, in.maxRestarts)
		}
		if d.requeueAfter < 0 || (d.requeueAfter > 0 && d.requeueAfter < minRequeue) {
			t.Fatalf("requeueAfter %s", d.requeueAfter)
		}
		if d.causeReplica != -1 && !due[d.causeReplica] {
			t.Fatalf("cause replica %d is not a breached replica due for a decision (due: %v)", d.causeReplica, due)
		}
		all := slices.Concat(d.restart, d.restartUncounted)
		for i, r := range all {
			if !due[r] || slices.Contains(all[:i], r) {
				t.Fatalf("restart %v: replica %d is not due for a restart, or restarted twice (due: %v)", all, r, due)
			}
		}

		var deadline *time.Time
		if in.maxRuntime != nil && in.startTime != nil {
			at := in.startTime.Add(*in.maxRuntime)
			deadline = &at
		}
		switch d.failReason {
		case "":
			if int64(d.restartCount) != int64(in.restartCount)+int64(len(all)) {
				t.Fatalf("restartCount went from %d to %d with %d restarts", in.restartCount, d.restartCount, len(all))
			}
			if len(d.restart) > 0 && int64(len(d.restart)) > int64(in.maxRestarts)-int64(in.restartCount-in.uncountedRestarts) {
				t.Fatalf("%d restarts with %d of %d restarts used", len(d.restart), in.restartCount-in.uncountedRestarts, in.maxRestarts)
			}
		case copsev1alpha1.ReasonMaxRestartsExceeded:
			if d.restartCount-d.uncountedRestarts < in.maxRestarts || d.causeReplica == -1 {
				t.Fatalf("MaxRestartsExceeded with %d counted restarts of %d, cause %d", d.restartCount-d.uncountedRestarts, in.maxRestarts, d.causeReplica)
			}
		case copsev1alpha1.ReasonFailedByRule, copsev1alpha1.ReasonMaxUncountedRestartsExceeded:
			// checkFailureRules checked them.
		case copsev1alpha1.ReasonMaxRuntimeExceeded:
			if deadline == nil || in.now.Before(*deadline) {
				t.Fatalf("MaxRuntimeExceeded at %v before the deadline %v", in.now, deadline)
			}
		default:
			t.Fatalf("unknown failReason %q", d.failReason)
		}
		if d.failReason != "" && (len(all) > 0 || d.failMessage == "" || d.requeueAfter != 0) {
			t.Fatalf("failure %q restarts %v, message %q, requeue %s", d.failReason, d.restart, d.failMessage, d.requeueAfter)
		}
		if last, ok := allSucceeded(in.replicas); ok && (deadline == nil || !last.After(*deadline)) {
			if d.failReason != "" || len(all) > 0 || d.restartCount != in.restartCount {
				t.Fatalf("every replica succeeded in time, yet the decision is %+v", d)
			}
		}
	})
}

// checkFailureRules checks the failure rules' part of a training decision:
//   - an uncounted restart never changes the counted ones (restartCount -
//     uncountedRestarts), and a counted one never the uncounted ones;
//   - uncountedRestarts stays within maxUncountedRestarts unless it
//     already exceeded it;
//   - each restart follows its replica's verdict: uncounted ones a
//     RestartReplicaWithoutCount rule's, counted ones any other that is not
//     FailWorkload or Ignore (an ignored failure never restarts, nor is it
//     the cause of the workload's failure);
//   - FailedByRule is the verdict of the cause replica, a FailWorkload
//     rule; MaxUncountedRestartsExceeded comes from a
//     RestartReplicaWithoutCount rule once the uncounted budget is spent;
//   - the verdicts recorded are those of the restarts, and of the failure
//     that ended the workload, if one did.
func checkFailureRules(t *testing.T, in trainingInputs, d trainingDecision) {
	t.Helper()
	verdict := map[int]lifecycle.RuleVerdict{}
	for _, r := range in.replicas {
		verdict[r.index] = r.verdict
	}
	if d.failReason == "" || d.failReason == copsev1alpha1.ReasonMaxRestartsExceeded || d.failReason == copsev1alpha1.ReasonMaxRuntimeExceeded ||
		d.failReason == copsev1alpha1.ReasonFailedByRule || d.failReason == copsev1alpha1.ReasonMaxUncountedRestartsExceeded {
		counted := (d.restartCount - d.uncountedRestarts) - (in.restartCount - in.uncountedRestarts)
		if d.failReason == "" && (int(counted) != len(d.restart) || int(d.uncountedRestarts-in.uncountedRestarts) != len(d.restartUncounted)) {
			t.Fatalf("counted +%d, uncounted +%d for restarts %v and uncounted restarts %v", counted, d.uncountedRestarts-in.uncountedRestarts, d.restart, d.restartUncounted)
		}
	}
	if d.uncountedRestarts > max(in.uncountedRestarts, in.maxUncountedRestarts) || d.uncountedRestarts < in.uncountedRestarts {
		t.Fatalf("uncountedRestarts went from %d to %d, max %d", in.uncountedRestarts, d.uncountedRestarts, in.maxUncountedRestarts)
	}
	for _, r := range d.restartUncounted {
		if verdict[r].Action != copsev1alpha1.FailureActionRestartReplicaWithoutCount {
			t.Fatalf("uncounted restart of replica %d, whose verdict is %+v", r, verdict[r])
		}
	}
	for _, r := range d.restart {
		if a := verdict[r].Action; a == copsev1alpha1.FailureActionRestartReplicaWithoutCount || a == copsev1alpha1.FailureActionFailWorkload ||
			a == copsev1alpha1.FailureActionIgnore {
			t.Fatalf("counted restart of replica %d, whose verdict is %+v", r, verdict[r])
		}
	}
	if d.causeReplica >= 0 && verdict[d.causeReplica].Action == copsev1alpha1.FailureActionIgnore {
		t.Fatalf("replica %d, whose failure an Ignore rule matched, is the cause", d.causeReplica)
	}
	switch d.failReason {
	case copsev1alpha1.ReasonFailedByRule:
		if d.causeReplica < 0 || verdict[d.causeReplica].Action != copsev1alpha1.FailureActionFailWorkload {
			t.Fatalf("FailedByRule caused by replica %d, verdict %+v", d.causeReplica, verdict[d.causeReplica])
		}
	case copsev1alpha1.ReasonMaxUncountedRestartsExceeded:
		if d.causeReplica < 0 || verdict[d.causeReplica].Action != copsev1alpha1.FailureActionRestartReplicaWithoutCount || d.uncountedRestarts < in.maxUncountedRestarts {
			t.Fatalf("MaxUncountedRestartsExceeded caused by replica %d (verdict %+v) with %d of %d", d.causeReplica, verdict[d.causeReplica], d.uncountedRestarts, in.maxUncountedRestarts)
		}
	}
	// Only restarts made are counted: a pass that fails the workload
	// restarts nothing, so it counts nothing; its one verdict is the
	// failure's (none for maxRuntime). Otherwise one verdict per restart.
	if d.failReason != "" {
		if d.restartCount != in.restartCount || d.uncountedRestarts != in.uncountedRestarts || len(d.restart)+len(d.restartUncounted) != 0 {
			t.Fatalf("failure %q counted restarts %d -> %d (uncounted %d -> %d) or restarts %v %v", d.failReason,
				in.restartCount, d.restartCount, in.uncountedRestarts, d.uncountedRestarts, d.restart, d.restartUncounted)
		}
		wantVerdicts := 1
		if d.failReason == copsev1alpha1.ReasonMaxRuntimeExceeded {
			wantVerdicts = 0
		}
		if len(d.verdicts) != wantVerdicts {
			t.Fatalf("failure %q recorded %d verdicts %+v, want %d", d.failReason, len(d.verdicts), d.verdicts, wantVerdicts)
		}
	} else if want := int(d.restartCount - in.restartCount); len(d.verdicts) != want || len(d.restart)+len(d.restartUncounted) != want {
		t.Fatalf("%d verdicts recorded for %d restarts, %d uncounted, counted %d", len(d.verdicts), len(d.restart), len(d.restartUncounted), want)
	}
}

// FuzzComputePhase: terminal phases stay; Failed comes only to a failing
// Training workload with no pod left, and never after SuccessCriteriaMet;
// Succeeded only to a Training workload that succeeded and is not failing,
// or, after SuccessCriteriaMet, has no pod left; a started or Running
// workload does not go back to Pending unless it is suspended and no pod
// is left, and then it does.
func FuzzComputePhase(f *testing.F) {
	// The inputs of TestComputePhase.
	for _, in := range []phaseInputs{
		{training: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhasePending, started: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, activePods: 3},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, succeeded: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhasePending, succeeded: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, failing: true, activePods: 2},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, failing: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, failing: true, succeeded: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseSucceeded, failing: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseFailed, started: true, succeeded: true},
		{previous: copsev1alpha1.PodCliqueSetPhaseRunning, succeeded: true, started: true},
		{previous: copsev1alpha1.PodCliqueSetPhaseRunning, failing: true},
		{},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, successCriteriaMet: true, activePods: 2},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, successCriteriaMet: true, failing: true},
		{training: true, previous: copsev1alpha1.PodCliqueSetPhaseRunning, suspended: true, started: true},
		{previous: copsev1alpha1.PodCliqueSetPhaseRunning, suspended: true, activePods: 1},
	} {
		f.Add(in.training, string(in.previous), in.failing, in.activePods, in.succeeded, in.started, in.suspended, in.successCriteriaMet)
	}
	f.Fuzz(func(t *testing.T, training bool, previous string, failing bool, activePods int, succeeded, started, suspended, successCriteriaMet bool) {
		in := phaseInputs{training: training, previous: copsev1alpha1.PodCliqueSetPhase(previous), failing: failing,
			activePods: activePods, succeeded: succeeded, started: started, suspended: suspended, successCriteriaMet: successCriteriaMet}
		got := computePhase(in)
		switch {
		case in.previous.IsTerminal():
			if got != in.previous {
				t.Fatalf("terminal phase %s became %s", in.previous, got)
			}
		case got == copsev1alpha1.PodCliqueSetPhaseFailed:
			if !training || !failing || activePods != 0 || successCriteriaMet {
				t.Fatalf("Failed for %+v", in)
			}
		case got == copsev1alpha1.PodCliqueSetPhaseSucceeded:
			if !training || (successCriteriaMet && activePods != 0) || (!successCriteriaMet && (failing || !succeeded)) {
				t.Fatalf("Succeeded for %+v", in)
			}
		case got == copsev1alpha1.PodCliqueSetPhasePending:
			// A suspended workload goes back to Pending once no pod is left.
			if (started || in.previous == copsev1alpha1.PodCliqueSetPhaseRunning) && (!suspended || activePods != 0) {
				t.Fatalf("Pending for %+v", in)
			}
		case suspended && activePods == 0:
			t.Fatalf("%s for a suspended workload with no pod left: %+v", got, in)
		case got != copsev1alpha1.PodCliqueSetPhaseRunning:
			t.Fatalf("phase %q for %+v", got, in)
		}
	})
}

// recreationsOf reads at most limit recreations, four bytes each: replica
// (modulo replicas), attempt (modulo 5), completed (low bit), and which of
// the UIDs obj-0 to obj-7 the entry lists (a bit each). With unique, a
// replica gets at most one entry (a later one is dropped), as in the status
// mergeRecreations writes.
func recreationsOf(src *fuzzinput.Source, limit, replicas int, unique bool) []copsev1alpha1.ReplicaRecreation {
	var out []copsev1alpha1.ReplicaRecreation
	seen := map[int32]bool{}
	for range src.Intn(limit + 1) {
		rec := copsev1alpha1.ReplicaRecreation{
			ReplicaIndex: int32(src.Intn(replicas)),
			Reason:       copsev1alpha1.RecreationReasonTrainingRestart,
			Attempt:      int32(src.Intn(5)),
			StartedAt:    metav1.NewTime(t0),
		}
		if src.Bool() {
			completed := metav1.NewTime(t0.Add(time.Minute))
			rec.CompletedAt = &completed
		}
		rec.Deleting = uidsOf(src.Byte())
		if unique && seen[rec.ReplicaIndex] {
			continue
		}
		seen[rec.ReplicaIndex] = true
		out = append(out, rec)
	}
	return out
}

// uidsOf lists obj-i for every bit i set in mask.
func uidsOf(mask byte) []types.UID {
	var out []types.UID
	for i := range 8 {
		if mask&(1<<i) != 0 {
			out = append(out, types.UID("obj-"+string(rune('0'+i))))
		}
	}
	return out
}

// encodeRecreations is the input recreationsOf reads back as recs (whose
// Deleting UIDs must be among obj-0 to obj-7), for the given replicas.
func encodeRecreations(recs []copsev1alpha1.ReplicaRecreation) []byte {
	out := []byte{byte(len(recs))}
	for _, rec := range recs {
		var mask byte
		for _, uid := range rec.Deleting {
			mask |= 1 << (uid[len(uid)-1] - '0')
		}
		completed := byte(0)
		if rec.CompletedAt != nil {
			completed = 1
		}
		out = append(out, byte(rec.ReplicaIndex), byte(rec.Attempt), completed, mask)
	}
	return out
}

// FuzzAssessRecreations: every unfinished recreation is in progress, and
// either finished (no listed object and no pod of an earlier attempt of
// its replica is left) or has that many things remaining; finished replicas
// are in progress and have none remaining.
//
// objects is a mask of the existing UIDs among obj-0 to obj-7.
func FuzzAssessRecreations(f *testing.F) {
	// The input of TestAssessRecreations, its UIDs renamed.
	now := metav1.NewTime(t0)
	recs := []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, Attempt: 2, Deleting: []types.UID{"obj-0", "obj-1"}},
		{ReplicaIndex: 1, Attempt: 1, Deleting: []types.UID{"obj-2"}},
		{ReplicaIndex: 2, Attempt: 1, Deleting: []types.UID{"obj-3"}},
		{ReplicaIndex: 3, Attempt: 1, CompletedAt: &now},
	}
	pods := []podstate.Summary{
		{Replica: 1, Attempt: 0, Terminating: true},
		{Replica: 2, Attempt: 1},
		{Replica: 3, Attempt: 0},
	}
	f.Add(encodeRecreations(recs), byte(1<<1), fuzzinput.EncodePods(pods, t0))

	f.Fuzz(func(t *testing.T, recreations []byte, objects byte, podBytes []byte) {
		recs := recreationsOf(fuzzinput.New(recreations), 8, 4, true)
		objectUIDs := map[types.UID]bool{}
		for _, uid := range uidsOf(objects) {
			objectUIDs[uid] = true
		}
		pods := fuzzinput.New(podBytes).Pods(32, t0)

		p := assessRecreations(recs, objectUIDs, pods)
		for replica := range p.finished {
			if !p.inProgress[replica] || p.remaining[replica] != 0 {
				t.Fatalf("replica %d finished but in progress %v, remaining %d", replica, p.inProgress[replica], p.remaining[replica])
			}
		}
		for replica, n := range p.remaining {
			if !p.inProgress[replica] || n <= 0 {
				t.Fatalf("replica %d has %d remaining, in progress %v", replica, n, p.inProgress[replica])
			}
		}
		inProgress := 0
		for _, rec := range recs {
			replica := int(rec.ReplicaIndex)
			if rec.CompletedAt != nil {
				continue
			}
			inProgress++
			left := slices.ContainsFunc(rec.Deleting, func(uid types.UID) bool { return objectUIDs[uid] }) ||
				slices.ContainsFunc(pods, func(pod podstate.Summary) bool { return pod.Replica == replica && pod.Attempt < int(rec.Attempt) })
			if !p.inProgress[replica] || p.finished[replica] == left {
				t.Fatalf("replica %d (attempt %d): in progress %v, finished %v, though something of the old run is left: %v",
					replica, rec.Attempt, p.inProgress[replica], p.finished[replica], left)
			}
		}
		if len(p.inProgress) != inProgress {
			t.Fatalf("%d replicas in progress, %d unfinished recreations", len(p.inProgress), inProgress)
		}
	})
}

// FuzzMergeRecreations: the merged list has one entry per replica of the
// previous and added lists, in the order they first appear; an added entry
// replaces the replica's previous one; otherwise the replica keeps its
// previous entry (its attempt above all), completed now if it just
// finished, its UIDs then dropped. The inputs are not changed.
//
// finished is a mask of the finished replicas 0 to 7.
func FuzzMergeRecreations(f *testing.F) {
	// The inputs of TestMergeRecreations, its UIDs renamed.
	previous := []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, Attempt: 1, Deleting: []types.UID{"obj-0"}},
		{ReplicaIndex: 1, Attempt: 2, Deleting: []types.UID{"obj-1"}},
	}
	added := []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 2, Attempt: 1, Deleting: []types.UID{"obj-2"}}}
	f.Add(encodeRecreations(previous), encodeRecreations(added), byte(1<<1))
	f.Add(encodeRecreations(append(previous, added...)), encodeRecreations([]copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 3}}), byte(0))

	f.Fuzz(func(t *testing.T, previousBytes, addedBytes []byte, finishedMask byte) {
		// Duplicates are allowed in both lists: the result has none anyway.
		previous := recreationsOf(fuzzinput.New(previousBytes), 8, 6, false)
		added := recreationsOf(fuzzinput.New(addedBytes), 4, 6, false)
		finished := map[int]bool{}
		for i := range 8 {
			if finishedMask&(1<<i) != 0 {
				finished[i] = true
			}
		}
		now := t0.Add(time.Hour)
		previousCopy, addedCopy := deepCopyRecreations(previous), deepCopyRecreations(added)

		got := mergeRecreations(previous, added, recreationProgress{finished: finished}, now)

		if !reflect.DeepEqual(previous, previousCopy) || !reflect.DeepEqual(added, addedCopy) {
			t.Fatalf("mergeRecreations changed its inputs")
		}
		var order []int32
		lastPrevious, lastAdded := map[int32]copsev1alpha1.ReplicaRecreation{}, map[int32]copsev1alpha1.ReplicaRecreation{}
		for _, list := range []struct {
			recs []copsev1alpha1.ReplicaRecreation
			last map[int32]copsev1alpha1.ReplicaRecreation
		}{{previous, lastPrevious}, {added, lastAdded}} {
			for _, rec := range list.recs {
				if !slices.Contains(order, rec.ReplicaIndex) {
					order = append(order, rec.ReplicaIndex)
				}
				list.last[rec.ReplicaIndex] = rec
			}
		}
		if len(got) != len(order) {
			t.Fatalf("%d entries for replicas %v: %+v", len(got), order, got)
		}
		for i, rec := range got {
			replica := rec.ReplicaIndex
			if replica != order[i] {
				t.Fatalf("entry %d is for replica %d, want %d (order %v)", i, replica, order[i], order)
			}
			if want, ok := lastAdded[replica]; ok {
				if !reflect.DeepEqual(rec, want) {
					t.Fatalf("replica %d: got %+v, want the added entry %+v", replica, rec, want)
				}
				continue
			}
			kept := lastPrevious[replica]
			want := *kept.DeepCopy()
			if want.CompletedAt == nil && finished[int(replica)] {
				want.CompletedAt, want.Deleting = &metav1.Time{Time: now}, nil
			}
			if !reflect.DeepEqual(rec, want) {
				t.Fatalf("replica %d: got %+v, want %+v", replica, rec, want)
			}
		}
	})
}

func deepCopyRecreations(recs []copsev1alpha1.ReplicaRecreation) []copsev1alpha1.ReplicaRecreation {
	if recs == nil {
		return nil
	}
	out := make([]copsev1alpha1.ReplicaRecreation, len(recs))
	for i := range recs {
		recs[i].DeepCopyInto(&out[i])
	}
	return out
}
