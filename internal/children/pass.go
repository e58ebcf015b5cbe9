package children

import "sigs.k8s.io/controller-runtime/pkg/client"

// Pass is one reconcile pass of an owner level's children, as plain values:
// the level's rows, what it observed, how many replicas it has and which of
// them may get objects now.
type Pass[In any] struct {
	Rows     []Row[In]
	Observed Observed
	// Replicas is how many replicas the owner has (its spec.replicas): the
	// objects of replicas at or beyond it are deleted.
	Replicas int
	// Inputs are what the rows build one replica's objects from; replica
	// NoReplica for the Shared ones.
	Inputs func(replica int) In
	// MayCreate reports whether a replica may have its objects made or
	// brought to the template now; nil means every replica may. The objects
	// of a replica that may not are left as they are.
	MayCreate func(replica int) bool
	// Frozen: existing objects are never refreshed (a Training workload's
	// objects never change once created: its pod templates are immutable,
	// and its counts are what its run is judged on).
	Frozen bool
}

// Sets are the pass's desired-against-observed sets, in the order they are
// written: first each row's Shared objects (those of the owner as a whole,
// which its replicas' objects may refer to), then each replica that may get
// objects, row by row in table order (a row listed earlier is made first),
// and last the objects of replicas the owner no longer has.
func (p Pass[In]) Sets() []Set {
	var sets []Set
	for _, row := range p.Rows {
		if row.Shared != nil {
			sets = append(sets, p.set(row, row.Shared(p.Inputs(NoReplica)), NoReplica))
		}
	}
	for replica := range p.Replicas {
		if p.MayCreate != nil && !p.MayCreate(replica) {
			continue
		}
		in := p.Inputs(replica)
		for _, row := range p.Rows {
			if row.Desired != nil {
				sets = append(sets, p.set(row, row.Desired(in), replica))
			}
		}
	}
	for _, row := range p.Rows {
		if surplus := p.Observed.From(row.Kind, max(p.Replicas, 0)); len(surplus) > 0 {
			sets = append(sets, Set{Kind: row.Kind, Observed: surplus})
		}
	}
	return sets
}

func (p Pass[In]) set(row Row[In], desired []client.Object, replica int) Set {
	s := Set{Kind: row.Kind, Desired: desired, Observed: p.Observed.Of(row.Kind, replica), Refresh: row.Refresh}
	if p.Frozen {
		s.Refresh = nil
	}
	return s
}
