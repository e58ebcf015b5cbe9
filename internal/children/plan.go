package children

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Set is what an owner wants of one kind in one scope (one of its replicas,
// or itself as a whole) beside what exists there.
type Set struct {
	// Kind names the kind in errors.
	Kind string
	// Step names the part of the pass the set belongs to, for errors
	// (Outcome.Errors); "" for ObjectsStep.
	Step string
	// Desired are the objects wanted, built afresh this pass. Names are
	// fixed, so a create repeated on a stale cache fails with AlreadyExists
	// instead of making a second object.
	Desired []client.Object
	// Observed are the existing objects of the kind in the scope. Only
	// those the owner controls, and that are not being deleted, are ever
	// refreshed or deleted; one of a desired name held by another owner (a
	// namesake's, about to be garbage collected) keeps the desired object
	// from being created until it is gone.
	Observed []client.Object
	// Refresh brings an existing object (a copy) towards the desired one of
	// the same name and reports whether it changed; nil: never updated.
	Refresh func(existing, desired client.Object) bool
}

// Op is a kind of write.
type Op string

// The writes a plan is made of.
const (
	Create Op = "create"
	Update Op = "update"
	Delete Op = "delete"
)

// Write is one write of a plan: the object to create (desired), to update
// (the refreshed copy of an existing object) or to delete (the existing
// object, deleted with its UID as a precondition).
type Write struct {
	Op     Op
	Kind   string
	Step   string
	Object client.Object
}

// Plan is what a pass writes, in order.
type Plan struct {
	Writes []Write
	// CutShort: some writes did not fit in the budget and are left for the
	// next pass.
	CutShort bool
}

// PlanWrites picks, set by set, the writes that make what exists what is
// desired: a desired object that does not exist is created; an existing one
// of a desired name that owner controls is updated when Refresh changes it;
// an existing one that owner controls and no longer wants is deleted.
// Objects being deleted are left alone. At most budget writes are planned,
// the first ones in set order; CutShort says whether any was left out.
func PlanWrites(owner types.UID, sets []Set, budget int) Plan {
	var p Plan
	var step string
	add := func(op Op, kind string, obj client.Object) {
		if len(p.Writes) >= budget {
			p.CutShort = true
			return
		}
		p.Writes = append(p.Writes, Write{Op: op, Kind: kind, Step: step, Object: obj})
	}
	for _, s := range sets {
		step = s.Step
		present := make(map[string]client.Object, len(s.Observed))
		for _, obj := range s.Observed {
			if _, seen := present[obj.GetName()]; !seen {
				present[obj.GetName()] = obj
			}
		}
		wanted := make(map[string]bool, len(s.Desired))
		for _, desired := range s.Desired {
			if wanted[desired.GetName()] {
				continue
			}
			wanted[desired.GetName()] = true
			current, exists := present[desired.GetName()]
			if !exists {
				add(Create, s.Kind, desired)
				continue
			}
			if s.Refresh == nil || !ours(current, owner) {
				continue
			}
			updated, ok := current.DeepCopyObject().(client.Object)
			if ok && s.Refresh(updated, desired) {
				add(Update, s.Kind, updated)
			}
		}
		for _, obj := range s.Observed {
			if !wanted[obj.GetName()] && ours(obj, owner) {
				wanted[obj.GetName()] = true // one delete per name
				add(Delete, s.Kind, obj)
			}
		}
	}
	return p
}

// ours: owner controls obj and it is not being deleted.
func ours(obj client.Object, owner types.UID) bool {
	return controllerOf(obj) == owner && owner != "" && obj.GetDeletionTimestamp().IsZero()
}

// controllerOf is the UID of obj's controller, "" when it has none.
func controllerOf(obj client.Object) types.UID {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}
