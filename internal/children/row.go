package children

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Row is one kind of child object in an owner level's table. In is what the
// level builds one replica's objects from (blueprint.ReplicaInputs for a
// PodCliqueSet, blueprint.GroupInputs for a PodCliqueScalingGroup,
// blueprint.CliqueInputs for a PodClique). The level lists every row, builds
// the missing objects of its replicas that may have them, deletes those of
// removed replicas and those no longer wanted, and, for rows
// RecreatedWithReplica, deletes a replica's objects when the replica is
// recreated so that they are built afresh for the new run. A new kind is one
// more row; the level's controller needs no change.
type Row[In any] struct {
	// Kind names the kind in logs, errors and status.
	Kind string
	// NewObject returns an empty object of the kind, for watches.
	NewObject func() client.Object
	// NewList returns an empty list of the kind, for observing.
	NewList func() client.ObjectList
	// Desired builds the objects one replica of the owner needs. Nil for
	// kinds that another controller creates (a scaling group's PodCliques,
	// seen from the PodCliqueSet): the level then only observes and
	// recreates them.
	Desired func(in In) []client.Object
	// Shared builds the kind's objects that belong to no replica but to the
	// owner as a whole (a claim every replica shares, the PodCliqueSet's
	// Workload); the inputs' replica is NoReplica. They carry no replica
	// label; the level creates the missing ones and deletes those it no
	// longer wants, and recreations never touch them. Nil for kinds that are
	// only per replica.
	Shared func(in In) []client.Object
	// Refresh brings an existing object (a copy the caller may change)
	// towards desired, the object Desired or Shared built under the same
	// name, and reports whether it changed and must be written. Nil for
	// kinds whose objects are never updated once created.
	Refresh func(existing, desired client.Object) bool
	// RecreatedWithReplica: deleted with the replica's run on a recreation.
	RecreatedWithReplica bool
	// MakesPods: the kind's objects make pods, themselves or through the
	// objects they make. A suspension deletes only these (see DeletedBy).
	MakesPods bool
}

// DeletedBy reports whether a recreation for reason deletes the replica's
// objects of the row. Every recreation deletes the rows RecreatedWithReplica,
// except that a suspension keeps those that make no pods (the gangs): a
// suspended workload keeps its place in the scheduler's queue, and resumes
// into the same gangs.
func (r Row[In]) DeletedBy(reason copsev1alpha1.RecreationReason) bool {
	return r.DeletedByRecreation(copsev1alpha1.ReplicaRecreation{Reason: reason})
}

// DeletedByRecreation is DeletedBy for a recorded recreation: a restart in
// place (rec.InPlace) keeps, as a suspension does, the rows that make no
// pods (the gangs, the ComputeDomains): its kept pods stay in them.
func (r Row[In]) DeletedByRecreation(rec copsev1alpha1.ReplicaRecreation) bool {
	if (rec.Reason == copsev1alpha1.RecreationReasonSuspension || rec.InPlace) && !r.MakesPods {
		return false
	}
	return r.RecreatedWithReplica
}

// RefreshAs makes a row's Refresh from the refresh rule of its kind T: an
// existing or desired object of another kind is never refreshed.
func RefreshAs[T client.Object](refresh func(existing, desired T) bool) func(existing, desired client.Object) bool {
	return func(existing, desired client.Object) bool {
		e, okE := existing.(T)
		d, okD := desired.(T)
		return okE && okD && refresh(e, d)
	}
}
