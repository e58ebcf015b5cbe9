package lifecycle

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
)

// Records is one reading of what a PodCliqueSet's spec and status say about
// its run as a whole: whether the workload ended, is suspended or waits
// for Kueue, which replicas succeeded or had their whole run, and each
// replica's latest recreation. A pass reads it once (RecordsOf) and asks it
// as often as it needs; the status fields are parsed only here.
type Records struct {
	// Known is false when the PodCliqueSet could not be found; every other
	// field is then zero.
	Known bool
	// Deleting, Training, Ended, Suspended and AwaitingAdmission are
	// ReplicaState's fields of the same names (Ended: WorkloadEnded).
	Deleting, Training, Ended, Suspended, AwaitingAdmission bool
	// Succeeded and Created are status.succeededReplicaIndexes and
	// status.createdReplicaIndexes (SucceededReplicas, CreatedReplicas).
	Succeeded, Created indexset.Set
	// replicas holds what the recreations record of each replica.
	replicas map[int]replicaRecord
}

// replicaRecord is what status.replicaRecreations says of one replica. The
// list holds one entry per replica (a list map); should it hold more, the
// first names the current attempt, any in progress makes the replica
// recreating, the highest attempt supersedes the runs below it, and the
// last says whether the run restarted in place.
type replicaRecord struct {
	attempt, highest int32
	recreating       bool
	inPlace, barrier bool
}

// RecordsOf reads the records of pcs (nil when not found).
func RecordsOf(pcs *copsev1alpha1.PodCliqueSet) Records {
	if pcs == nil {
		return Records{}
	}
	r := Records{Known: true, Deleting: !pcs.DeletionTimestamp.IsZero(), Training: pcs.IsTraining(), Ended: WorkloadEnded(pcs),
		Suspended: pcs.IsSuspended(), AwaitingAdmission: awaitingAdmission(pcs),
		Succeeded: SucceededReplicas(pcs), Created: CreatedReplicas(pcs),
		replicas: make(map[int]replicaRecord, len(pcs.Status.ReplicaRecreations))}
	for _, rec := range pcs.Status.ReplicaRecreations {
		i := int(rec.ReplicaIndex)
		was, seen := r.replicas[i]
		now := replicaRecord{attempt: rec.Attempt, highest: max(was.highest, rec.Attempt), recreating: was.recreating || rec.CompletedAt == nil,
			inPlace: rec.InPlace, barrier: rec.InPlace && rec.BarrierLiftedAt == nil}
		if seen {
			now.attempt = was.attempt
		}
		r.replicas[i] = now
	}
	return r
}

// Attempt is the run a replica's objects belong to: the attempt of
// its latest recreation, 0 if it was never recreated.
func (r Records) Attempt(replica int) int32 {
	return r.replicas[replica].attempt
}

// Replica is the state of one replica. attempt is the run the asking
// object belongs to (its copse.dev/attempt label); -1 when the asker is the
// PodCliqueSet itself.
func (r Records) Replica(replica, attempt int) ReplicaState {
	if !r.Known {
		return ReplicaState{}
	}
	s := ReplicaState{Known: true, Deleting: r.Deleting, Ended: r.Ended, Suspended: r.Suspended,
		AwaitingAdmission: r.AwaitingAdmission, Succeeded: r.Succeeded.Has(replica), RunCreated: r.Created.Has(replica)}
	if rec, ok := r.replicas[replica]; ok {
		s.Recreating = rec.recreating
		s.Superseded = attempt >= 0 && attempt < int(rec.highest)
		s.InPlace, s.Barrier = rec.inPlace, rec.barrier
	}
	return s
}
