package kueue

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// decideShape is one state of a PodCliqueSet, its Workload and the rest of
// Decide's inputs, built from the fixtures (fixtures_test.go): each field a
// choice read from one byte of the fuzz input, in field order.
type decideShape struct {
	pcs      byte // absent, present, beingDeleted
	queue    byte // queueTeamA, queueNone, queueOther
	pcsFlags byte // pcsSuspended, ...
	phase    byte // phasePending, phaseRunning, phaseSucceeded, phaseFailed
	cliques  byte // cliquesAsQueued, cliquesNine, cliquesConflicting
	workload byte // absent, present, beingDeleted
	quota    byte // quotaNone, quotaPending, quotaReserved
	admitted byte // condNone, condTrue, condFalse
	evicted  byte // evictedNone, evictedPreempted, evictedDeactivated, evictedFalse
	finished byte // finishedNone, finishedSucceeded, finishedFailedToStart
	ready    byte // readyNone, readyWaitForStart, readyStarted, readyWaitForRecovery
	check    byte // checkNone, checkPending, checkReady
	wlFlags  byte // wlNoFinalizer, wlHighPriority
	orphan   byte // orphanNone, orphanHeld, orphanReleased
	inFlags  byte // inNameTaken, ...
	flavors  byte // flavorsRead, flavorsMissing, flavorsNone
}

// Choices of decideShape's fields.
const (
	absent, present, beingDeleted = 0, 1, 2

	queueTeamA, queueNone, queueOther = 0, 1, 2

	cliquesAsQueued, cliquesNine, cliquesConflicting = 0, 1, 2

	quotaNone, quotaPending, quotaReserved = 0, 1, 2

	condNone, condTrue, condFalse = 0, 1, 2

	evictedNone, evictedPreempted, evictedDeactivated, evictedFalse = 0, 1, 2, 3

	finishedNone, finishedSucceeded, finishedFailedToStart = 0, 1, 2

	readyNone, readyWaitForStart, readyStarted, readyWaitForRecovery = 0, 1, 2, 3

	checkNone, checkPending, checkReady = 0, 1, 2

	orphanNone, orphanHeld, orphanReleased = 0, 1, 2

	flavorsRead, flavorsMissing, flavorsNone = 0, 1, 2

	phasePending, phaseRunning, phaseSucceeded, phaseFailed = 0, 1, 2, 3
)

var decidePhases = []copsev1alpha1.PodCliqueSetPhase{copsev1alpha1.PodCliqueSetPhasePending, copsev1alpha1.PodCliqueSetPhaseRunning,
	copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed}

// Bits of decideShape.pcsFlags.
const (
	pcsSuspended    = 1 << iota
	pcsMerged       // an admission (to flavorName) merged into its templates
	pcsAvailable    // every replica available
	pcsInference    // an Inference PodCliqueSet
	pcsFailing      // Failed True: its outcome is decided
	pcsHadAdmitted  // it carries an Admitted condition (True when pcsMerged)
	pcsMoreReplicas // 3 replicas: its Workload no longer matches
	pcsToleration   // a toleration added: its Workload no longer matches
)

// Bits of decideShape.wlFlags.
const (
	wlNoFinalizer  = 1 << iota // made before copse set the finalizer
	wlHighPriority             // made with WorkloadPriorityClass high
)

// Bits of decideShape.inFlags.
const (
	inNameTaken = 1 << iota
	inPriorityErr
	inTopologyErr
	inRefusal
	inPodsRemain
	inHighPriority // the priority resolves to WorkloadPriorityClass high
)

// decideShapeOf reads a decideShape; each choice is the byte modulo the
// number of choices, so that a seed's bytes are its field values.
func decideShapeOf(src *fuzzinput.Source) decideShape {
	return decideShape{
		pcs: byte(src.Intn(3)), queue: byte(src.Intn(3)), pcsFlags: src.Byte(), phase: byte(src.Intn(len(decidePhases))),
		cliques: byte(src.Intn(3)), workload: byte(src.Intn(3)), quota: byte(src.Intn(3)), admitted: byte(src.Intn(3)),
		evicted: byte(src.Intn(4)), finished: byte(src.Intn(3)), ready: byte(src.Intn(4)), check: byte(src.Intn(3)),
		wlFlags: src.Byte(), orphan: byte(src.Intn(3)), inFlags: src.Byte(), flavors: byte(src.Intn(3)),
	}
}

// bytes is the input decideShapeOf reads back as s.
func (s decideShape) bytes() []byte {
	return []byte{s.pcs, s.queue, s.pcsFlags, s.phase, s.cliques, s.workload, s.quota, s.admitted,
		s.evicted, s.finished, s.ready, s.check, s.wlFlags, s.orphan, s.inFlags, s.flavors}
}

// inputs builds Decide's inputs. The Workload is built from the queued
// PodCliqueSet (Inference, or with the conflicting nodeSelector, as the
// PodCliqueSet is); the PodCliqueSet's other changes (replicas, a
// toleration, its queue, nine cliques) are made after, so that it no
// longer matches. Conditions combine freely, beyond what Kueue writes;
// the name is taken (and an orphan there) only when there is no Workload.
func (s decideShape) inputs() Inputs {
	in := Inputs{Now: now}
	base := queued()
	if s.pcsFlags&pcsInference != 0 {
		base = inference(base)
	}
	if s.cliques == cliquesConflicting {
		base = withNodeSelector(base, flavorLabel, "b")
	}
	if s.workload != absent {
		in.Workload = s.workloadOf(base)
	}

	pcs := base
	if s.pcsFlags&pcsMerged != 0 {
		infos, err := AdmissionInfos(reserved(workloadOf(pcs)), flavors())
		if err == nil {
			if merged, err := Merge(pcs, infos); err == nil {
				pcs = merged
			}
		}
	}
	if s.cliques == cliquesNine {
		pcs = withCliques(pcs, 9)
	}
	pcs.Spec.Suspend = ptr.To(s.pcsFlags&pcsSuspended != 0)
	pcs.Status.Phase = decidePhases[s.phase]
	if s.pcsFlags&pcsFailing != 0 {
		pcs = failing(pcs)
	}
	if s.pcsFlags&pcsHadAdmitted != 0 {
		if s.pcsFlags&pcsMerged != 0 {
			pcs = withAdmitted(pcs, metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted)
		} else {
			pcs = withAdmitted(pcs, metav1.ConditionFalse, copsev1alpha1.ReasonPending)
		}
	}
	if s.pcsFlags&pcsMoreReplicas != 0 {
		pcs = withReplicas(pcs, 3)
	}
	if s.pcsFlags&pcsAvailable != 0 {
		pcs.Status.AvailableReplicas = pcs.Spec.Replicas
	}
	if s.pcsFlags&pcsToleration != 0 {
		pcs = withToleration(pcs)
	}
	switch s.queue {
	case queueNone:
		pcs = withQueue(pcs, "")
	case queueOther:
		pcs = withQueue(pcs, "team-b")
	}
	switch s.pcs {
	case present:
		in.PodCliqueSet = pcs
	case beingDeleted:
		in.PodCliqueSet = deleting(pcs)
	}

	// As the Inputs say: an object of another owner holding the name (an
	// orphan among them) leaves the PodCliqueSet without a Workload.
	if s.orphan != orphanNone && in.Workload == nil {
		in.Orphan = withOwnerUID(deletingWorkload(admitted(workloadOf(queued()))), "earlier-uid")
		if s.orphan == orphanReleased {
			in.Orphan = withoutFinalizer(in.Orphan)
		}
	}
	in.WorkloadNameTaken = in.Workload == nil && (s.inFlags&inNameTaken != 0 || in.Orphan != nil && in.PodCliqueSet != nil)
	if s.inFlags&inPriorityErr != 0 {
		in.PriorityErr = errors.New(`WorkloadPriorityClass "high" not found`)
	}
	if s.inFlags&inTopologyErr != 0 {
		in.TopologyErr = errors.New("spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing")
	}
	if s.inFlags&inRefusal != 0 {
		in.Refusal = "exceeded quota: workloads"
	}
	in.PodsRemain = s.inFlags&inPodsRemain != 0
	if s.inFlags&inHighPriority != 0 {
		in.Priority = Priority{ClassRef: kueue.NewWorkloadPriorityClassRef("high"), Value: 1000}
	}
	switch s.flavors {
	case flavorsRead:
		in.Flavors = flavors()
	case flavorsMissing:
		in.Flavors = Flavors{}
	}
	return in
}

func (s decideShape) workloadOf(base *copsev1alpha1.PodCliqueSet) *kueue.Workload {
	wl := workloadOf(base)
	if s.wlFlags&wlHighPriority != 0 {
		wl.Spec.PriorityClassRef, wl.Spec.Priority = kueue.NewWorkloadPriorityClassRef("high"), ptr.To[int32](1000)
	}
	switch s.quota {
	case quotaPending:
		wl = pendingIn(wl)
	case quotaReserved:
		wl = reserved(wl)
	}
	switch s.admitted {
	case condTrue:
		wl = withCondition(wl, kueue.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "The workload is admitted")
	case condFalse:
		wl = withCondition(wl, kueue.WorkloadAdmitted, metav1.ConditionFalse, "NoReservation", "The workload has no reservation")
	}
	switch s.evicted {
	case evictedPreempted:
		wl = evicted(wl, kueue.WorkloadEvictedByPreemption)
	case evictedDeactivated:
		wl = evicted(wl, kueue.WorkloadDeactivated)
	case evictedFalse:
		wl = withCondition(wl, kueue.WorkloadEvicted, metav1.ConditionFalse, "QuotaReserved", "")
	}
	switch s.finished {
	case finishedSucceeded:
		wl = finished(wl, kueue.WorkloadFinishedReasonSucceeded)
	case finishedFailedToStart:
		wl = finished(wl, ReasonFailedToStart)
	}
	switch s.ready {
	case readyWaitForStart:
		wl = podsReady(wl, metav1.ConditionFalse, kueue.WorkloadWaitForStart)
	case readyStarted:
		wl = podsReady(wl, metav1.ConditionTrue, kueue.WorkloadStarted)
	case readyWaitForRecovery:
		wl = podsReady(wl, metav1.ConditionFalse, kueue.WorkloadWaitForRecovery)
	}
	switch s.check {
	case checkPending:
		wl = withCheck(wl, kueue.CheckStatePending)
	case checkReady:
		wl = withCheck(wl, kueue.CheckStateReady)
	}
	if s.workload == beingDeleted {
		wl = deletingWorkload(wl)
	}
	if s.wlFlags&wlNoFinalizer != 0 {
		wl = withoutFinalizer(wl)
	}
	return wl
}

// decideSeeds are the shapes of TestDecide's rows.
func decideSeeds() []decideShape {
	// The fixtures' admitted(): quota reserved, Admitted, PodsReady False.
	admittedWl := decideShape{workload: present, quota: quotaReserved, admitted: condTrue, ready: readyWaitForStart}
	with := func(s decideShape, change func(*decideShape)) decideShape { change(&s); return s }
	return []decideShape{
		// Ending.
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase, s.inFlags = beingDeleted, phaseRunning, inPodsRemain }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase, s.wlFlags = beingDeleted, phaseRunning, wlNoFinalizer }),
		{orphan: orphanHeld},
		{orphan: orphanReleased},
		{},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inNameTaken, orphan: orphanHeld},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inNameTaken, orphan: orphanReleased},
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.finished = present, pcsHadAdmitted, phaseSucceeded, finishedSucceeded
		}),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.finished = present, pcsSuspended, finishedFailedToStart }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase = present, phaseSucceeded }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase = present, phaseFailed }),
		{pcs: present, phase: phaseSucceeded},
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase, s.pcsFlags = present, phaseRunning, pcsFailing }),

		// No Workload can be built.
		{pcs: present, pcsFlags: pcsSuspended, cliques: cliquesNine},
		{pcs: present, phase: phaseRunning, cliques: cliquesNine},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inTopologyErr},
		with(admittedWl, func(s *decideShape) { s.pcs, s.phase, s.inFlags = present, phaseRunning, inTopologyErr }),

		// No Workload.
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inHighPriority},
		{pcs: present, pcsFlags: pcsSuspended | pcsHadAdmitted},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inRefusal},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inPodsRemain},
		{pcs: present, pcsFlags: pcsMerged, phase: phaseRunning, inFlags: inPodsRemain},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inPriorityErr},
		{pcs: present, pcsFlags: pcsSuspended, inFlags: inNameTaken},
		{pcs: present, phase: phaseRunning, inFlags: inNameTaken | inPodsRemain},

		// The Workload is being deleted.
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.workload, s.inFlags = present, pcsMerged, phaseRunning, beingDeleted, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.workload, s.inFlags = present, pcsSuspended|pcsMerged, beingDeleted, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.workload = present, pcsSuspended|pcsMerged, beingDeleted }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.workload = present, pcsSuspended, beingDeleted }),

		// The queue label removed.
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.queue = present, pcsSuspended, queueNone }),
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.queue, s.workload = present, pcsSuspended|pcsMerged, queueNone, beingDeleted
		}),
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.queue, s.workload, s.inFlags = present, pcsMerged, phaseRunning, queueNone, beingDeleted, inPodsRemain
		}),
		{pcs: present, pcsFlags: pcsSuspended | pcsHadAdmitted, queue: queueNone},

		// The Workload no longer matches.
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.inFlags = present, pcsMerged|pcsMoreReplicas, phaseRunning, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags = present, pcsSuspended|pcsMerged|pcsMoreReplicas }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags = present, pcsSuspended|pcsMoreReplicas }),
		{pcs: present, pcsFlags: pcsSuspended, queue: queueOther, workload: present, quota: quotaPending},
		{pcs: present, pcsFlags: pcsSuspended | pcsToleration, workload: present, quota: quotaPending},

		// PodsReady.
		{pcs: present, pcsFlags: pcsSuspended, workload: present, quota: quotaPending},
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.inFlags = present, pcsMerged|pcsAvailable, phaseRunning, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.ready, s.inFlags = present, pcsMerged, phaseRunning, readyStarted, inPodsRemain
		}),

		// Eviction.
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.evicted, s.inFlags = present, pcsMerged, phaseRunning, evictedPreempted, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.evicted, s.inFlags = present, pcsSuspended|pcsMerged, evictedPreempted, inPodsRemain
		}),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.evicted = present, pcsSuspended|pcsMerged, evictedPreempted }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.evicted = present, pcsSuspended, evictedPreempted }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.evicted = present, pcsSuspended, evictedDeactivated }),

		// Waiting and starting.
		{pcs: present, pcsFlags: pcsSuspended, workload: present, quota: quotaPending, ready: readyWaitForStart},
		{pcs: present, pcsFlags: pcsSuspended, workload: present, quota: quotaReserved, ready: readyWaitForStart, check: checkPending},
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.inFlags = present, pcsSuspended, inPodsRemain }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags = present, pcsSuspended }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.check = present, pcsSuspended, checkReady }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.flavors = present, pcsSuspended, flavorsMissing }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags, s.cliques = present, pcsSuspended, cliquesConflicting }),
		with(admittedWl, func(s *decideShape) { s.pcs, s.pcsFlags = present, pcsSuspended|pcsInference }),

		// Running.
		{pcs: present, pcsFlags: pcsMerged, phase: phaseRunning, workload: present, quota: quotaPending, ready: readyWaitForStart, inFlags: inPodsRemain},
		with(admittedWl, func(s *decideShape) {
			s.pcs, s.pcsFlags, s.phase, s.inFlags = present, pcsMerged, phaseRunning, inPodsRemain
		}),
	}
}

// FuzzDecide checks Decide's promises (see its comment and the Step,
// Inputs and Decision types) on any combination of a PodCliqueSet (gone,
// being deleted, in a queue or not, suspended or not, ended, carrying an
// admission), its Workload (gone, being deleted, matching or not, with any
// of QuotaReserved, Admitted, Evicted, Finished, PodsReady and an admission
// check, with or without the finalizer), an orphan, a taken name, priority
// and topology errors, missing flavors, a refusal and remaining pods:
//
//   - the inputs are not changed, and the same inputs give the same
//     decision;
//   - the step is one of the Step values, with a reason; the PodCliqueSet
//     is written exactly by Start, Stop and Restore, the Workload exactly by
//     the other steps; an event comes only with a step, a warning only for
//     a Workload refused; RetryAfter is 0 or the retry wait;
//   - without a PodCliqueSet, or with one being deleted, nothing starts
//     and the PodCliqueSet is not written (nor, when it is gone, its
//     condition);
//   - the Admitted condition is well formed, True only from an admitted
//     Workload (or as the PodCliqueSet already carries it, when its
//     Workload is gone or finished), and removed exactly when the
//     PodCliqueSet left its queue and has no Workload;
//   - a held orphan is released before anything else;
//   - Start only starts a suspended, queued PodCliqueSet whose pods are
//     gone and templates restored, under a matching Workload that is
//     admitted and neither evicted, finished nor being deleted; it changes
//     only spec.suspend and the cliques' scheduling directives; no other
//     step writes spec.suspend false;
//   - Stop only suspends a running, queued PodCliqueSet, changing nothing
//     else; Restore only a suspended one whose pods are gone and whose
//     templates carry its Workload's admission, which it takes out,
//     changing only the scheduling directives;
//   - while pods remain, nothing is started or restored, no Workload is
//     created and no reservation cleared;
//   - a Workload is created only for a suspended, queued PodCliqueSet that
//     has none, whose name is free, whose priority and packing resolve and
//     that has not ended: named for it, controlled by it, held by the
//     finalizer, in its queue, with its priority;
//   - the finalizer of the Workload is removed only when the PodCliqueSet
//     is being deleted, or the Workload is finished or being deleted, and
//     then (for a PodCliqueSet still queued or suspended) only once its pods
//     are gone and its templates restored; the update removes the finalizer
//     and nothing else;
//   - a Workload is deleted only when it is not being deleted already, and
//     the PodCliqueSet left its queue or is suspended with its pods gone and
//     templates restored;
//   - Finish, SetPodsReady and ClearReservation write the input Workload's
//     status as their names say, keeping its identity and resourceVersion.
func FuzzDecide(f *testing.F) {
	for _, s := range decideSeeds() {
		f.Add(s.bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		shape := decideShapeOf(fuzzinput.New(data))
		in := shape.inputs()
		before := copyInputs(in)
		d := Decide(in)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("shape %+v: Decide changed its inputs", shape)
		}
		if again := Decide(in); !reflect.DeepEqual(d, again) {
			t.Fatalf("shape %+v: the same inputs gave %+v, then %+v", shape, d, again)
		}
		if err := decisionViolation(in, d); err != "" {
			t.Fatalf("shape %+v: step %q (%s): %s", shape, d.Step, d.Why, err)
		}
	})
}

var (
	pcsSteps      = []Step{StepStart, StepStop, StepRestore}
	workloadSteps = []Step{StepCreateWorkload, StepDeleteWorkload, StepClearReservation, StepFinishWorkload, StepSetPodsReady, StepRemoveFinalizer}
)

// decisionViolation is the first of FuzzDecide's promises d breaks for in,
// "" for none.
func decisionViolation(in Inputs, d Decision) string {
	pcs, wl := in.PodCliqueSet, in.Workload
	writesPCS, writesWorkload := slices.Contains(pcsSteps, d.Step), slices.Contains(workloadSteps, d.Step)
	switch {
	case d.Step != StepNone && !writesPCS && !writesWorkload:
		return "not a Step"
	case d.Why == "":
		return "no reason given"
	case (d.PodCliqueSet != nil) != writesPCS:
		return "a PodCliqueSet to write, or none, against the step"
	case (d.Workload != nil) != writesWorkload:
		return "a Workload to write, or none, against the step"
	case d.RetryAfter != 0 && d.RetryAfter != retryWait:
		return "RetryAfter " + d.RetryAfter.String()
	case d.PodCliqueSet != nil && d.PodCliqueSet == pcs:
		return "the input PodCliqueSet is written in place"
	case d.Workload != nil && d.Step != StepDeleteWorkload && (d.Workload == wl || d.Workload == in.Orphan):
		return "the input Workload is written in place"
	}
	if msg := eventViolation(d); msg != "" {
		return msg
	}
	heldOrphan := in.Orphan != nil && holdsFinalizer(in.Orphan)
	if heldOrphan && (d.Step != StepRemoveFinalizer || !reflect.DeepEqual(d.Workload, withoutFinalizer(in.Orphan))) {
		return "a held orphan is not released first"
	}
	if pcs == nil && d.Step != StepNone && !heldOrphan {
		return "a step without a PodCliqueSet"
	}
	gone := pcs == nil || !pcs.DeletionTimestamp.IsZero()
	if gone && (writesPCS || d.Step == StepCreateWorkload) {
		return "a PodCliqueSet that is gone or being deleted is written, or gets a Workload"
	}
	if msg := admittedViolation(in, d, heldOrphan); msg != "" {
		return msg
	}
	if d.PodCliqueSet != nil && !d.PodCliqueSet.IsSuspended() && d.Step != StepStart {
		return "spec.suspend false written by a step other than Start"
	}
	if in.PodsRemain && slices.Contains([]Step{StepStart, StepRestore, StepCreateWorkload, StepClearReservation}, d.Step) {
		return "pods remain"
	}
	switch d.Step {
	case StepStart, StepStop, StepRestore:
		return pcsWriteViolation(in, d)
	case StepCreateWorkload:
		return createViolation(in, d)
	case StepRemoveFinalizer:
		if heldOrphan {
			return ""
		}
		return releaseViolation(in, d)
	case StepDeleteWorkload:
		switch {
		case d.Workload != wl || !wl.DeletionTimestamp.IsZero():
			return "deletes another Workload, or one already being deleted"
		case QueueName(pcs) != "" && (!pcs.IsSuspended() || in.PodsRemain || CarriesAdmission(pcs, wl)):
			return "deletes the Workload of a queued PodCliqueSet that runs, has pods, or carries its admission"
		}
	case StepFinishWorkload, StepSetPodsReady, StepClearReservation:
		return statusWriteViolation(in, d)
	}
	return ""
}

func eventViolation(d Decision) string {
	if d.Event == nil {
		return ""
	}
	want := map[Step]string{StepStart: EventAdmitted, StepStop: EventEvicted, StepFinishWorkload: EventWorkloadRefused,
		StepCreateWorkload: EventRequeued, StepClearReservation: EventRequeued}[d.Step]
	switch {
	case want == "" || d.Event.Reason != want:
		return "event " + d.Event.Reason + " with the step"
	case d.Event.Warning != (d.Event.Reason == EventWorkloadRefused):
		return "event " + d.Event.Reason + " is a warning, or WorkloadRefused is not"
	case d.Event.Message == "":
		return "an event without a message"
	}
	return ""
}

func admittedViolation(in Inputs, d Decision, heldOrphan bool) string {
	pcs, wl := in.PodCliqueSet, in.Workload
	if pcs == nil {
		if d.Admitted != (metav1.Condition{}) || d.RemoveAdmitted {
			return "an Admitted condition for a PodCliqueSet that is gone"
		}
		return ""
	}
	leftQueue := !heldOrphan && pcs.DeletionTimestamp.IsZero() && QueueName(pcs) == "" && wl == nil
	if d.RemoveAdmitted != leftQueue {
		return "the Admitted condition removed, or kept, against the PodCliqueSet having left its queue without a Workload"
	}
	if d.RemoveAdmitted {
		return ""
	}
	c := d.Admitted
	switch {
	case c.Type != copsev1alpha1.ConditionTypeAdmitted || c.Reason == "" || c.Message == "" || len(c.Message) > conditionMessageLimit:
		return "a malformed Admitted condition"
	case c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse && c.Status != metav1.ConditionUnknown:
		return "Admitted status " + string(c.Status)
	case (c.Status == metav1.ConditionTrue) != (c.Reason == copsev1alpha1.ReasonAdmitted):
		return "Admitted " + string(c.Status) + " with reason " + c.Reason
	}
	if c.Status == metav1.ConditionTrue {
		current := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
		fromWorkload := wl != nil && IsAdmitted(wl) && !IsFinished(wl)
		kept := current != nil && reflect.DeepEqual(*current, c) && (wl == nil || IsFinished(wl))
		if !fromWorkload && !kept {
			return "Admitted True without an admitted Workload"
		}
	}
	return ""
}

// pcsWriteViolation checks Start, Stop and Restore.
func pcsWriteViolation(in Inputs, d Decision) string {
	pcs, wl, out := in.PodCliqueSet, in.Workload, d.PodCliqueSet
	queued := QueueName(pcs) != ""
	switch d.Step {
	case StepStart:
		switch {
		case !pcs.IsSuspended() || !queued || out.IsSuspended():
			return "starts a PodCliqueSet that runs or left its queue, or leaves it suspended"
		case wl == nil || !IsAdmitted(wl) || Eviction(wl) != nil || IsFinished(wl) || !wl.DeletionTimestamp.IsZero():
			return "starts without an admitted Workload that is neither evicted, finished nor being deleted"
		case in.WorkloadNameTaken || in.TopologyErr != nil || pcs.Status.Phase.IsTerminal() || lifecycle.WorkloadEnded(pcs):
			return "starts despite a taken name, a packing error or an ended run"
		case CarriesAdmission(pcs, wl):
			return "starts before the templates are restored"
		case Mismatch(BuildWorkload(pcs, mustPodSets(pcs, in), in.Priority), wl, true, HasQuotaReservation(wl)) != "" && in.PriorityErr == nil:
			return "starts under a Workload that does not match"
		}
		if !reflect.DeepEqual(withoutDirectives(out), withoutDirectives(pcs)) {
			return "Start changes more than spec.suspend and the scheduling directives"
		}
	case StepStop:
		if pcs.IsSuspended() || !queued || !out.IsSuspended() {
			return "stops a PodCliqueSet that is suspended or left its queue, or leaves it running"
		}
		want := pcs.DeepCopy()
		want.Spec.Suspend = ptr.To(true)
		if !reflect.DeepEqual(out, want) {
			return "Stop changes more than spec.suspend"
		}
	case StepRestore:
		switch {
		case !pcs.IsSuspended() || !out.IsSuspended():
			return "restores a running PodCliqueSet, or resumes it"
		case wl == nil || !CarriesAdmission(pcs, wl) || CarriesAdmission(out, wl):
			return "restores templates that carry no admission, or leaves it in"
		case !reflect.DeepEqual(withoutDirectives(out), withoutDirectives(pcs)):
			return "Restore changes more than the scheduling directives"
		}
	}
	return ""
}

// mustPodSets is pcs's pod sets; Decide built them before starting.
func mustPodSets(pcs *copsev1alpha1.PodCliqueSet, in Inputs) []kueue.PodSet {
	podSets, err := PodSets(pcs, in.Topology, in.MaxPodSets)
	if err != nil {
		panic(err)
	}
	return podSets
}

// withoutDirectives is pcs without spec.suspend and its cliques' scheduling
// directives: what Start and Restore do not change.
func withoutDirectives(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	out := pcs.DeepCopy()
	out.Spec.Suspend = nil
	for _, clique := range out.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		clique.Labels, clique.Annotations = nil, nil
		spec := &clique.Spec.PodSpec
		spec.NodeSelector, spec.Tolerations, spec.SchedulingGates = nil, nil, nil
	}
	return out
}

func createViolation(in Inputs, d Decision) string {
	pcs, created := in.PodCliqueSet, d.Workload
	ref := metav1.GetControllerOf(created)
	switch {
	case !pcs.IsSuspended() || QueueName(pcs) == "" || in.Workload != nil || in.WorkloadNameTaken:
		return "creates a Workload for a running or unqueued PodCliqueSet, or one that has one, or whose name is taken"
	case in.PriorityErr != nil || in.TopologyErr != nil || pcs.Status.Phase.IsTerminal() || lifecycle.WorkloadEnded(pcs):
		return "creates a Workload despite a priority or packing error, or for an ended run"
	case created.Name != WorkloadName(pcs.Name) || created.Namespace != pcs.Namespace || ref == nil || ref.UID != pcs.UID:
		return "creates a Workload of another name, namespace or controller"
	case !holdsFinalizer(created) || string(created.Spec.QueueName) != QueueName(pcs):
		return "creates a Workload without the finalizer, or in another queue"
	case !reflect.DeepEqual(created.Spec.PriorityClassRef, in.Priority.ClassRef) || ptr.Deref(created.Spec.Priority, -1) != in.Priority.Value:
		return "creates a Workload of another priority"
	}
	return ""
}

// releaseViolation checks the removal of the finalizer of the
// PodCliqueSet's own Workload.
func releaseViolation(in Inputs, d Decision) string {
	pcs, wl := in.PodCliqueSet, in.Workload
	switch {
	case wl == nil || !holdsFinalizer(wl) || !reflect.DeepEqual(d.Workload, withoutFinalizer(wl)):
		return "the update does not just remove the finalizer the Workload holds"
	case pcs.DeletionTimestamp.IsZero() && !IsFinished(wl) && wl.DeletionTimestamp.IsZero():
		return "releases a live Workload of a live PodCliqueSet"
	case pcs.DeletionTimestamp.IsZero() && !IsFinished(wl) && (QueueName(pcs) != "" || pcs.IsSuspended()) &&
		(in.PodsRemain || CarriesAdmission(pcs, wl)):
		return "releases the Workload being deleted before the pods are gone and the templates restored"
	}
	return ""
}

// statusWriteViolation checks FinishWorkload, SetPodsReady and
// ClearReservation.
func statusWriteViolation(in Inputs, d Decision) string {
	pcs, wl, out := in.PodCliqueSet, in.Workload, d.Workload
	if wl == nil || out.UID != wl.UID || out.Name != wl.Name || out.ResourceVersion != wl.ResourceVersion {
		return "writes the status of another Workload, or at another resourceVersion"
	}
	switch d.Step {
	case StepFinishWorkload:
		if IsFinished(wl) || !IsFinished(out) {
			return "finishes a finished Workload, or leaves it unfinished"
		}
		reason := meta.FindStatusCondition(out.Status.Conditions, kueue.WorkloadFinished).Reason
		if !pcs.Status.Phase.IsTerminal() && reason != ReasonFailedToStart {
			return "finishes the Workload of a PodCliqueSet that has not ended, reason " + reason
		}
	case StepSetPodsReady:
		if meta.FindStatusCondition(out.Status.Conditions, kueue.WorkloadPodsReady) == nil {
			return "PodsReady not set"
		}
		a, b := wl.DeepCopy(), out.DeepCopy()
		meta.RemoveStatusCondition(&a.Status.Conditions, kueue.WorkloadPodsReady)
		meta.RemoveStatusCondition(&b.Status.Conditions, kueue.WorkloadPodsReady)
		if !equality.Semantic.DeepEqual(a, b) {
			return "SetPodsReady changes more than PodsReady"
		}
	case StepClearReservation:
		switch {
		case Eviction(wl) == nil || !HasQuotaReservation(wl) || !pcs.IsSuspended() || CarriesAdmission(pcs, wl):
			return "clears the reservation of a Workload not evicted or not reserved, or under a PodCliqueSet that runs or carries its admission"
		case HasQuotaReservation(out) || IsAdmitted(out) || out.Status.Admission != nil:
			return "the reservation is not cleared"
		}
	}
	return ""
}

// copyInputs is a deep copy of in, to see that Decide changes nothing.
func copyInputs(in Inputs) Inputs {
	out := in
	out.PodCliqueSet, out.Workload, out.Orphan = in.PodCliqueSet.DeepCopy(), in.Workload.DeepCopy(), in.Orphan.DeepCopy()
	out.Priority.ClassRef = in.Priority.ClassRef.DeepCopy()
	if in.Topology != nil {
		out.Topology = map[string]*kueue.PodSetTopologyRequest{}
		for name, request := range in.Topology {
			out.Topology[name] = request.DeepCopy()
		}
	}
	if in.Flavors != nil {
		out.Flavors = Flavors{}
		for name, flavor := range in.Flavors {
			out.Flavors[name] = flavor.DeepCopy()
		}
	}
	return out
}
