package blueprint

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// CliqueInputs is what the objects of one pod index of a PodClique are
// built from.
type CliqueInputs struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	PodClique    *copsev1alpha1.PodClique
	// Template is the clique template the PodClique was made from; nil when
	// none is.
	Template *grovecorev1alpha1.PodCliqueTemplateSpec
	// Index is the pod index; children.NoReplica for the objects of the
	// PodClique as a whole (a row's Shared ones).
	Index int
	// ClaimTemplates are the ResourceClaimTemplate objects resourceSharing
	// names that exist (claimtemplates.Read).
	ClaimTemplates resourcesharing.External
}

// CliqueResource is one row of the PodClique level's table of kinds, kept
// by the PodClique controller (internal/children) before it creates pods.
type CliqueResource = children.Row[CliqueInputs]

// CliqueResources is the PodClique level's table.
func CliqueResources() []CliqueResource {
	return []CliqueResource{CliqueResourceClaims()}
}
