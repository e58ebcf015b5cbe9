package blueprint

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// ReplicaInputs is what the objects of one replica are built from.
type ReplicaInputs struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	// Replica is the PodCliqueSet replica; children.NoReplica for the
	// objects of the set as a whole (a row's Shared ones).
	Replica int
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

// ReplicaResource is one row of the PodCliqueSet level's table of kinds:
// the kinds the PodCliqueSet controller keeps per replica, and for the set
// as a whole (a row's Shared objects). A new kind is one more row; the
// controller needs no change. The mechanism is the same at every level
// (internal/children).
type ReplicaResource = children.Row[ReplicaInputs]

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
			Refresh:              children.RefreshAs(RefreshScalingGroup),
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
			Refresh:              children.RefreshAs(RefreshPodClique),
			RecreatedWithReplica: true,
			MakesPods:            true,
		},
		Autoscalers(),
	}
}
