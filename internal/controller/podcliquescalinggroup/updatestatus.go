package podcliquescalinggroup

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
)

// generation is what the group's update status is judged against.
type generation struct {
	// known: the PodCliqueSet has recorded a generation hash.
	known bool
	hash  string
	// templateHashes are the pod template hashes of the PodCliqueSet's
	// cliques, by clique name.
	templateHashes map[string]string
	onDelete       bool
}

func generationOf(pcs *copsev1alpha1.PodCliqueSet) generation {
	if pcs.Status.CurrentGenerationHash == nil {
		return generation{}
	}
	return generation{known: true, hash: *pcs.Status.CurrentGenerationHash, templateHashes: generationhash.PodTemplateHashes(pcs),
		onDelete: pcs.UpdatesOnDelete()}
}

// updateStatus sets the group's update fields as Grove reports them:
//
//   - updatedReplicas: group replicas whose every PodClique realises the
//     generation (cliqueUpdated) and is available;
//   - updateProgress starts when the PodCliqueSet's generation hash differs
//     from the one the group last realised; OnDelete ends it at once,
//     RollingRecreate once every PodClique of the group realises it. The
//     PodCliqueSet decides which gangs are replaced, so
//     readyReplicaIndicesSelectedToUpdate stays empty;
//   - currentPodCliqueSetGenerationHash once no update is in progress and
//     every PodClique realises the generation.
func updateStatus(status *grovecorev1alpha1.PodCliqueScalingGroupStatus, pcsg *copsev1alpha1.PodCliqueScalingGroup,
	g generation, cliques []copsev1alpha1.PodClique, now metav1.Time) {
	if !g.known {
		return
	}
	members := len(pcsg.Spec.CliqueNames)
	realised := map[int]int{}
	updatedAndAvailable := map[int]int{}
	var updatedCliques int32
	for i := range cliques {
		c := &cliques[i]
		j, ok := labels.Index(c.Labels, labels.ScalingGroupReplicaKey)
		if !ok || j >= int(pcsg.Spec.Replicas) || !c.DeletionTimestamp.IsZero() || !cliqueRealises(c, g) {
			continue
		}
		updatedCliques++
		realised[j]++
		minAvailable := c.MinAvailable()
		if c.Status.ReadyReplicas >= minAvailable && c.Status.UpdatedReplicas >= minAvailable {
			updatedAndAvailable[j]++
		}
	}
	status.UpdatedReplicas = 0
	converged := true
	for j := range int(pcsg.Spec.Replicas) {
		if updatedAndAvailable[j] >= members {
			status.UpdatedReplicas++
		}
		if realised[j] < members {
			converged = false
		}
	}

	progress := status.UpdateProgress
	if status.CurrentPodCliqueSetGenerationHash != nil && *status.CurrentPodCliqueSetGenerationHash != g.hash &&
		(progress == nil || progress.PodCliqueSetGenerationHash != g.hash) {
		progress = &grovecorev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: g.hash}
		if g.onDelete {
			progress.UpdateEndedAt = ptr.To(now)
		}
	} else if progress != nil {
		progress = progress.DeepCopy()
	}
	if progress != nil {
		progress.UpdatedPodCliquesCount = updatedCliques
		progress.TotalPodCliquesCount = pcsg.Spec.Replicas * int32(members)
		if progress.UpdateEndedAt == nil && converged {
			progress.UpdateEndedAt = ptr.To(now)
		}
	}
	status.UpdateProgress = progress
	if converged && (progress == nil || progress.UpdateEndedAt != nil) {
		status.CurrentPodCliqueSetGenerationHash = ptr.To(g.hash)
	}
}

// cliqueRealises: the PodClique carries its template's hash, and its own
// status says every pod runs it at the generation.
func cliqueRealises(c *copsev1alpha1.PodClique, g generation) bool {
	expected := g.templateHashes[c.Labels[labels.CliqueTemplateKey]]
	return expected != "" && c.Labels[labels.PodTemplateHashKey] == expected &&
		ptr.Deref(c.Status.CurrentPodTemplateHash, "") == expected &&
		ptr.Deref(c.Status.CurrentPodCliqueSetGenerationHash, "") == g.hash
}
