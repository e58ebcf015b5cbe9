package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
)

// ReplicaState is what decides whether a PodCliqueSet replica may get new
// pods, as plain values.
type ReplicaState struct {
	// Known is false when the PodCliqueSet could not be found.
	Known bool
	// Deleting: the PodCliqueSet has a deletion timestamp.
	Deleting bool
	// Ended: a Training workload reached Succeeded or Failed, or its Failed
	// or SuccessCriteriaMet condition is True (its pods are being
	// terminated).
	Ended bool
	// Suspended: spec.suspend is true; no replica gets pods until it is
	// false again.
	Suspended bool
	// AwaitingAdmission: the PodCliqueSet is suspended because it waits in a
	// Kueue queue: its Admitted condition (written by the kueueworkload
	// controller, only for a queued PodCliqueSet) is there and not True.
	// Kueue's admission reaches the controllers as spec.suspend, so this
	// only names the cause of a suspension; it implies Suspended.
	AwaitingAdmission bool
	// Recreating: a recreation of the replica is recorded and not completed;
	// the old run's objects and pods are still going away.
	Recreating bool
	// Superseded: the object asking belongs to an earlier run (attempt) of
	// the replica than the current one.
	Superseded bool
	// Succeeded: the replica of a Training workload succeeded
	// (status.succeededReplicaIndexes); its result is kept.
	Succeeded bool
	// RunCreated: every PodClique and PodCliqueScalingGroup of the Training
	// replica's current run has existed (status.createdReplicaIndexes).
	RunCreated bool
	// InPlace: the replica's current run began with a restart in place;
	// its PodCliques adopt the pods the restart kept.
	InPlace bool
	// Barrier (InPlace): a pod of the replica may still run the previous
	// attempt, so the current run's startup gates stay closed.
	Barrier bool
}

// Reason is why a replica may not get new pods: a condition reason
// (CamelCase, as the PodClique's PodCreationBlocked condition carries it);
// "" when it may. Message says it in a sentence.
type Reason string

// The reasons MayCreatePods and MayCreatePodCliques give for saying no.
const (
	ReasonUnknownWorkload Reason = "PodCliqueSetNotFound"
	ReasonDeleting        Reason = "PodCliqueSetDeleting"
	ReasonEnded           Reason = "WorkloadEnded"
	ReasonSucceeded       Reason = "ReplicaSucceeded"
	ReasonNotAdmitted     Reason = "NotAdmitted"
	ReasonSuspended       Reason = "Suspended"
	ReasonSuperseded      Reason = "Superseded"
	ReasonRecreating      Reason = "ReplicaRecreating"
	ReasonRunCreated      Reason = "RunCreated"
)

var reasonMessages = map[Reason]string{
	ReasonUnknownWorkload: "the PodCliqueSet is not found",
	ReasonDeleting:        "the PodCliqueSet is being deleted",
	ReasonEnded:           "the Training workload has ended",
	ReasonSucceeded:       "the replica succeeded (it met the success policy); its result is kept",
	ReasonNotAdmitted:     "the PodCliqueSet waits in its Kueue queue, suspended until Kueue admits it (see its Admitted condition)",
	ReasonSuspended:       "the PodCliqueSet is suspended (spec.suspend is true)",
	ReasonSuperseded:      "the object belongs to an earlier run of the replica",
	ReasonRecreating:      "the replica is being recreated; the previous run's pods are still going away",
	ReasonRunCreated:      "every PodClique of the replica's run was created; one that is missing was deleted from outside, and the replica restarts for it",
}

// Message is the reason in a sentence; "" for "".
func (r Reason) Message() string {
	return reasonMessages[r]
}

// MayCreatePods is the one predicate that says whether a replica may get new
// pods, or new children that would create pods. The PodClique controller
// (before creating pods, adding the clique's own reasons on top: see its
// creation state), the PodCliqueScalingGroup controller (before creating
// PodCliques) and the PodCliqueSet controller (before converging a
// replica's children and gangs) ask it. It returns "" when the replica may,
// else the reason why not: the first that holds, in the order below.
func MayCreatePods(s ReplicaState) Reason {
	switch {
	case !s.Known:
		return ReasonUnknownWorkload
	case s.Deleting:
		return ReasonDeleting
	case s.Ended:
		return ReasonEnded
	case s.Succeeded:
		return ReasonSucceeded
	case s.AwaitingAdmission:
		return ReasonNotAdmitted
	case s.Suspended:
		return ReasonSuspended
	case s.Superseded:
		return ReasonSuperseded
	case s.Recreating:
		return ReasonRecreating
	}
	return ""
}

// MayCreatePodCliques says whether a replica may get a new PodClique (or
// PodCliqueScalingGroup) now: MayCreatePods, and, for a Training replica,
// not once its run has been whole. A member of such a run that is missing
// was deleted from outside; the PodCliqueSet controller restarts the
// replica for it (a counted breach). Creating it afresh would lose its
// records and run again the indices that exited 0.
func MayCreatePodCliques(s ReplicaState) Reason {
	if why := MayCreatePods(s); why != "" {
		return why
	}
	if s.RunCreated {
		return ReasonRunCreated
	}
	return ""
}

// ReplicaStateOf reads the state of one replica from its PodCliqueSet (nil
// when not found). attempt is the run the asking object belongs to (its
// copse.dev/attempt label); -1 when the asker is the PodCliqueSet itself.
func ReplicaStateOf(pcs *copsev1alpha1.PodCliqueSet, replica int, attempt int) ReplicaState {
	return RecordsOf(pcs).Replica(replica, attempt)
}

// awaitingAdmission reports whether the PodCliqueSet is suspended while it
// waits in a Kueue queue: its Admitted condition is there and not True.
func awaitingAdmission(pcs *copsev1alpha1.PodCliqueSet) bool {
	admitted := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted)
	return pcs.IsSuspended() && admitted != nil && admitted.Status != metav1.ConditionTrue
}

// WorkloadEnded reports whether a Training workload is over: its phase is
// terminal, or its Failed or SuccessCriteriaMet condition is True (the
// PodCliqueSet controller records the outcome before it terminates the
// pods). Always false for Inference.
func WorkloadEnded(pcs *copsev1alpha1.PodCliqueSet) bool {
	if !pcs.IsTraining() {
		return false
	}
	return pcs.Status.Phase.IsTerminal() ||
		meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed) ||
		meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
}

// MayCreatePodsChanged reports whether a change of a PodCliqueSet, from old
// to cur, can change what MayCreatePods answers for any of its replicas: a
// deletion started, the Training workload ended, spec.suspend changed (or,
// while suspended, whether it waits for Kueue's admission), a replica
// succeeded or had its whole run, or a recreation was recorded, completed
// or (in place) lifted its barrier. The PodClique controller is woken by such changes
// only: a clique that was refused pods because its replica was still being
// recreated gets them as soon as the recreation completes, with no other
// event needed.
func MayCreatePodsChanged(old, cur *copsev1alpha1.PodCliqueSet) bool {
	if old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() || WorkloadEnded(old) != WorkloadEnded(cur) ||
		old.IsSuspended() != cur.IsSuspended() || awaitingAdmission(old) != awaitingAdmission(cur) ||
		old.Status.SucceededReplicaIndexes != cur.Status.SucceededReplicaIndexes ||
		old.Status.CreatedReplicaIndexes != cur.Status.CreatedReplicaIndexes {
		return true
	}
	if len(old.Status.ReplicaRecreations) != len(cur.Status.ReplicaRecreations) {
		return true
	}
	for i, was := range old.Status.ReplicaRecreations {
		now := cur.Status.ReplicaRecreations[i]
		if was.ReplicaIndex != now.ReplicaIndex || was.Attempt != now.Attempt || (was.CompletedAt == nil) != (now.CompletedAt == nil) ||
			(was.BarrierLiftedAt == nil) != (now.BarrierLiftedAt == nil) {
			return true
		}
	}
	return false
}

// SucceededReplicas are the replicas status.succeededReplicaIndexes
// records; a malformed record counts none (the controller rewrites it on
// its next pass).
func SucceededReplicas(pcs *copsev1alpha1.PodCliqueSet) indexset.Set {
	return replicaSet(pcs.Status.SucceededReplicaIndexes, pcs)
}

// CreatedReplicas are the replicas status.createdReplicaIndexes records;
// a malformed record counts none.
func CreatedReplicas(pcs *copsev1alpha1.PodCliqueSet) indexset.Set {
	return replicaSet(pcs.Status.CreatedReplicaIndexes, pcs)
}

func replicaSet(record string, pcs *copsev1alpha1.PodCliqueSet) indexset.Set {
	set, err := indexset.Parse(record, int(pcs.Spec.Replicas))
	if err != nil {
		return indexset.Set{}
	}
	return set
}
