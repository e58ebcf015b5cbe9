package children

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NoReplica is the replica of the objects that belong to the owner as a
// whole (a row's Shared objects), and of objects without a replica label.
const NoReplica = -1

// Observed holds an owner's existing children, sorted once by row kind and
// then by the replica of the owner they belong to (NoReplica: the owner as
// a whole).
type Observed map[string]map[int][]client.Object

// Index sorts objects, by kind, by the replica replicaOf reads from each,
// keeping their order within a replica.
func Index(byKind map[string][]client.Object, replicaOf func(client.Object) int) Observed {
	out := Observed{}
	for kind, objs := range byKind {
		for _, obj := range objs {
			out.Add(kind, replicaOf(obj), obj)
		}
	}
	return out
}

// Add files obj under kind and replica.
func (o Observed) Add(kind string, replica int, obj client.Object) {
	if o[kind] == nil {
		o[kind] = map[int][]client.Object{}
	}
	o[kind][replica] = append(o[kind][replica], obj)
}

// Of are the objects of kind that belong to replica.
func (o Observed) Of(kind string, replica int) []client.Object { return o[kind][replica] }

// From are the objects of kind of every replica at or beyond first, in
// replica order: those of replicas the owner no longer has.
func (o Observed) From(kind string, first int) []client.Object {
	var replicas []int
	for r := range o[kind] {
		if r >= first {
			replicas = append(replicas, r)
		}
	}
	sort.Ints(replicas)
	var out []client.Object
	for _, r := range replicas {
		out = append(out, o[kind][r]...)
	}
	return out
}

// ControlledBy keeps the objects whose controller is one of owners.
func ControlledBy(objs []client.Object, owners map[types.UID]bool) []client.Object {
	var out []client.Object
	for _, obj := range objs {
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && owners[ref.UID] {
			out = append(out, obj)
		}
	}
	return out
}
