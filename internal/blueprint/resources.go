package blueprint

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// ReplicaInputs is what the objects of one replica are built from.
type ReplicaInputs struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	Replica      int
	// Attempt is the replica's current run (its copse.dev/attempt label).
	Attempt int32
	// GroupReplicas are the live replica counts of the replica's
	// PodCliqueScalingGroups, by object name; a group without an entry uses
	// its template count.
	GroupReplicas map[string]int32
	// Packing is the PodCliqueSet's topology packing as it can be applied
	// now (topology.Lookup): gangs' topology keys, PodCliques' pod affinity.
	Packing topology.Resolved
	// ClaimTemplates are the ResourceClaimTemplate objects resourceSharing
	// names that exist (resourcesharing.Gather).
	ClaimTemplates resourcesharing.External
}

// ReplicaResource is one row of the table of kinds the PodCliqueSet
// controller keeps per replica. The controller observes every row, builds
// the missing objects of replicas that may run, deletes those of removed
// replicas, and, for rows RecreatedWithReplica, deletes a replica's objects
// when the replica is recreated so they are built afresh for the new run. A
// new per-replica kind is one more row; the controller needs no change.
type ReplicaResource struct {
	// Kind names the kind in logs, errors and status.
	Kind string
	// NewObject returns an empty object of the kind, for watches.
	NewObject func() client.Object
	// NewList returns an empty list of the kind, for observing.
	NewList func() client.ObjectList
	// Desired builds the objects a replica needs. Nil for kinds that
	// another controller creates (a scaling group's PodCliques): the
	// PodCliqueSet controller then only observes and recreates them.
	Desired func(in ReplicaInputs) []client.Object
	// Shared builds the kind's objects that belong to no replica but to the
	// PodCliqueSet as a whole (a claim every replica shares), from
	// in.PodCliqueSet and in.ClaimTemplates (in.Replica is -1). They carry
	// no replica label; the controller creates the missing ones and deletes
	// those it no longer wants while the workload runs, and recreations
	// never touch them. Nil for kinds that are only per replica.
	Shared func(in ReplicaInputs) []client.Object
	// Refresh brings an existing object (a copy the caller may change)
	// towards desired, the object Desired built under the same name, and
	// reports whether it changed and must be written. Nil for kinds whose
	// objects are never updated once created.
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
func (r ReplicaResource) DeletedBy(reason copsev1alpha1.RecreationReason) bool {
	if reason == copsev1alpha1.RecreationReasonSuspension && !r.MakesPods {
		return false
	}
	return r.RecreatedWithReplica
}

// ReplicaResources are copse's own per-replica kinds. A scheduler backend
// adds its own rows (internal/scheduler).
func ReplicaResources() []ReplicaResource {
	return []ReplicaResource{
		// First, so that a replica's claims are created before the
		// PodCliques that make the pods using them.
		ResourceClaims(),
		{
			Kind:      "Service",
			NewObject: func() client.Object { return &corev1.Service{} },
			NewList:   func() client.ObjectList { return &corev1.ServiceList{} },
			Desired: func(in ReplicaInputs) []client.Object {
				return []client.Object{ReplicaService(in.PodCliqueSet, in.Replica)}
			},
			// The Service selects the replica's pods by replica label,
			// whatever their run, so it outlives recreations.
			RecreatedWithReplica: false,
		},
		{
			Kind:      "PodCliqueScalingGroup",
			NewObject: func() client.Object { return &copsev1alpha1.PodCliqueScalingGroup{} },
			NewList:   func() client.ObjectList { return &copsev1alpha1.PodCliqueScalingGroupList{} },
			Desired: func(in ReplicaInputs) []client.Object {
				var out []client.Object
				for _, group := range in.PodCliqueSet.Spec.Template.PodCliqueScalingGroupConfigs {
					out = append(out, ScalingGroup(in.PodCliqueSet, in.Replica, group, in.Attempt))
				}
				return out
			},
			Refresh: func(existing, desired client.Object) bool {
				e, okE := existing.(*copsev1alpha1.PodCliqueScalingGroup)
				d, okD := desired.(*copsev1alpha1.PodCliqueScalingGroup)
				return okE && okD && RefreshScalingGroup(e, d)
			},
			RecreatedWithReplica: true,
			MakesPods:            true,
		},
		{
			// Standalone PodCliques are built here; grouped ones by the
			// PodCliqueScalingGroup controller, but observed and recreated
			// with the replica all the same.
			Kind:      "PodClique",
			NewObject: func() client.Object { return &copsev1alpha1.PodClique{} },
			NewList:   func() client.ObjectList { return &copsev1alpha1.PodCliqueList{} },
			Desired: func(in ReplicaInputs) []client.Object {
				var out []client.Object
				for _, clique := range in.PodCliqueSet.StandaloneCliques() {
					out = append(out, StandalonePodClique(in.PodCliqueSet, in.Replica, clique, in.Attempt, in.Packing))
				}
				return out
			},
			Refresh: func(existing, desired client.Object) bool {
				e, okE := existing.(*copsev1alpha1.PodClique)
				d, okD := desired.(*copsev1alpha1.PodClique)
				return okE && okD && RefreshPodClique(e, d)
			},
			RecreatedWithReplica: true,
			MakesPods:            true,
		},
		Autoscalers(),
	}
}
