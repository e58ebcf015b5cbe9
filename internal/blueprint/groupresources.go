package blueprint

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// GroupInputs is what the objects of one replica of a PodCliqueScalingGroup
// are built from.
type GroupInputs struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	ScalingGroup *copsev1alpha1.PodCliqueScalingGroup
	// Config is the template's scaling group the object was made from
	// (resourcesharing.ScalingGroupConfig); nil when none is.
	Config *grovecorev1alpha1.PodCliqueScalingGroupConfig
	// Replica is the group replica; children.NoReplica for the objects of
	// the group as a whole (a row's Shared ones).
	Replica int
	// Packing is the PodCliqueSet's topology packing (topology.Lookup), as
	// the PodCliqueSet controller applies it.
	Packing topology.Resolved
	// ClaimTemplates are the ResourceClaimTemplate objects resourceSharing
	// names that exist (claimtemplates.Read).
	ClaimTemplates resourcesharing.External
}

// GroupResource is one row of the PodCliqueScalingGroup level's table of
// kinds, kept by the PodCliqueScalingGroup controller (internal/children).
type GroupResource = children.Row[GroupInputs]

// GroupResources is the PodCliqueScalingGroup level's table: the group's
// claims first, so that they exist before the PodCliques whose pods use
// them, then the PodCliques of each group replica.
func GroupResources() []GroupResource {
	return []GroupResource{GroupResourceClaims(), GroupPodCliques()}
}

// GroupPodCliques is the row of a scaling group's PodCliques: one per member
// clique and group replica, <pcsg>-<j>-<clique>, brought to the template
// as the standalone ones are (RefreshPodClique), and deleted with their
// group replica when it is recreated. A member clique missing from the
// template has none (the controller reports it).
func GroupPodCliques() GroupResource {
	return GroupResource{
		Kind:      "PodClique",
		NewObject: func() client.Object { return &copsev1alpha1.PodClique{} },
		NewList:   func() client.ObjectList { return &copsev1alpha1.PodCliqueList{} },
		Desired: func(in GroupInputs) []client.Object {
			var out []client.Object
			for _, name := range in.ScalingGroup.Spec.CliqueNames {
				if template := in.PodCliqueSet.CliqueTemplate(name); template != nil {
					out = append(out, GroupedPodClique(in.PodCliqueSet, in.ScalingGroup, int32(in.Replica), template, in.Packing))
				}
			}
			return out
		},
		Refresh:              children.RefreshAs(RefreshPodClique),
		RecreatedWithReplica: true,
		MakesPods:            true,
	}
}
