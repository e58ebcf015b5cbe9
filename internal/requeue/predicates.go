package requeue

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Watched is which events of a watched kind reach a controller.
type Watched int

const (
	// UpdatesOnly passes the updates changed says yes to.
	UpdatesOnly Watched = iota
	// UpdatesAndDeletions passes those updates and every deletion.
	UpdatesAndDeletions
)

// UpdatesOf is the predicate of a watch that reacts to some changes of an
// object of type T: an update passes when both sides are a T and changed
// says so; a deletion passes with UpdatesAndDeletions; creations and
// generic events never do (the object's creation is reconciled by whoever
// created it, or changes nothing yet). It keeps each controller's watches
// to the one decision that matters: what changed.
func UpdatesOf[T client.Object](watched Watched, changed func(old, cur T) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return watched == UpdatesAndDeletions },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(T)
			cur, okNew := e.ObjectNew.(T)
			return okOld && okNew && changed(old, cur)
		},
	}
}

// CreationsAndDeletions passes every event but updates: for children whose
// status changes (a claim's allocation as pods are scheduled) matter to no
// decision, while one created or deleted from outside does.
func CreationsAndDeletions() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
}
