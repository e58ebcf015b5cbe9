package podclique

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// templateState is what the PodClique's update status is judged against:
// the PodCliqueSet's generation hash and the hash of the clique's template.
type templateState struct {
	// known: the PodCliqueSet was found and has recorded a generation hash.
	known bool
	// generationHash is the PodCliqueSet's status.currentGenerationHash.
	generationHash string
	// templateHash is the hash of the clique's template in the
	// PodCliqueSet now; the PodClique's label carries it once the
	// PodCliqueSet (or scaling group) controller has refreshed it.
	templateHash string
	onDelete     bool
}

// templateStateOf reads the PodCliqueSet (nil when not found).
func templateStateOf(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique) templateState {
	if pcs == nil || pcs.Status.CurrentGenerationHash == nil {
		return templateState{}
	}
	clique := pcs.CliqueTemplate(pclq.Labels[labels.CliqueTemplateKey])
	if clique == nil {
		return templateState{}
	}
	return templateState{
		known:          true,
		generationHash: *pcs.Status.CurrentGenerationHash,
		templateHash:   generationhash.PodTemplateHash(pcs, clique),
		onDelete:       pcs.UpdateStrategyType() == grovecorev1alpha1.OnDeleteStrategy,
	}
}

// updateStatus sets the update fields of a PodClique's status as Grove
// reports them, from its pods and the PodCliqueSet:
//
//   - updatedReplicas: pods neither ended nor terminating that carry the
//     PodClique's template hash (labels.PodTemplateHashKey).
//   - updateProgress starts when the PodCliqueSet's generation hash differs
//     from the one the clique last realised (currentPodCliqueSetGenerationHash);
//     OnDelete ends it at once, RollingRecreate once no running pod has an
//     old hash and minAvailable pods are ready. Which pods are replaced is
//     the PodCliqueSet's decision (whole gangs), so
//     readyPodsSelectedToUpdate stays empty.
//   - currentPodTemplateHash and currentPodCliqueSetGenerationHash are set
//     when no update is in progress, the PodClique carries its template's
//     hash and every running pod has it.
func updateStatus(status *copsev1alpha1.PodCliqueStatus, pclq *copsev1alpha1.PodClique, t templateState, pods []podstate.Summary, now metav1.Time) {
	expected := pclq.Labels[labels.PodTemplateHashKey]
	if expected == "" {
		return
	}
	var updated, old, readyUpdated int32
	for _, p := range pods {
		if !p.Active() {
			continue
		}
		if p.TemplateHash != expected {
			old++
			continue
		}
		updated++
		if p.Ready {
			readyUpdated++
		}
	}
	status.UpdatedReplicas = updated
	if !t.known {
		return
	}
	progress := status.UpdateProgress
	if status.CurrentPodCliqueSetGenerationHash != nil && *status.CurrentPodCliqueSetGenerationHash != t.generationHash &&
		(progress == nil || progress.PodCliqueSetGenerationHash != t.generationHash) {
		progress = &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: t.generationHash}
		if t.onDelete {
			progress.UpdateEndedAt = ptr.To(now)
		}
	} else if progress != nil {
		progress = progress.DeepCopy()
	}
	labelCurrent := expected == t.templateHash
	if progress != nil && progress.UpdateEndedAt == nil {
		// The PodClique may take its template after the update started.
		progress.PodTemplateHash = expected
		if labelCurrent && old == 0 && readyUpdated >= min(pclq.MinAvailable(), pclq.Spec.Replicas) {
			progress.UpdateEndedAt = ptr.To(now)
		}
	} else if progress != nil && progress.PodTemplateHash == "" {
		progress.PodTemplateHash = expected
	}
	status.UpdateProgress = progress
	if labelCurrent && old == 0 && (progress == nil || progress.UpdateEndedAt != nil) {
		status.CurrentPodTemplateHash = ptr.To(expected)
		status.CurrentPodCliqueSetGenerationHash = ptr.To(t.generationHash)
	}
}
