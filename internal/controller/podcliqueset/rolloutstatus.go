package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// rolloutStatus writes the rollout's part of status as Grove reports it:
// currentGenerationHash, updatedReplicas (replicas with every PodClique on
// its template, no old pod running and every gang available) and
// updateProgress with the counts of PodCliques and PodCliqueScalingGroups
// that report the generation hash in their own status.
func rolloutStatus(status *copsev1alpha1.PodCliqueSetStatus, pcs *copsev1alpha1.PodCliqueSet, obs *observed,
	d rolloutDecision, replicas []rolloutReplica) {
	status.CurrentGenerationHash = &d.hash
	status.UpdatedReplicas = 0
	for _, r := range replicas {
		if replicaUpdated(r) {
			status.UpdatedReplicas++
		}
	}
	status.UpdateProgress = d.progress
	if p := status.UpdateProgress; p != nil {
		p.UpdatedPodCliquesCount, p.TotalPodCliquesCount, p.UpdatedPodCliqueScalingGroupsCount, p.TotalPodCliqueScalingGroupsCount =
			updateCounts(pcs, obs, d.hash)
	}
}

// updateCounts counts the standalone PodCliques and the
// PodCliqueScalingGroups whose status says they realise generation hash
// (Grove's currentPodCliqueSetGenerationHash), of those the spec expects.
func updateCounts(pcs *copsev1alpha1.PodCliqueSet, obs *observed, hash string) (cliques, totalCliques, groups, totalGroups int32) {
	totalCliques = int32(len(pcs.StandaloneCliques())) * pcs.Spec.Replicas
	totalGroups = int32(len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)) * pcs.Spec.Replicas
	for r := range int(pcs.Spec.Replicas) {
		for _, pclq := range obs.replica(r).podCliques {
			if pclq.Labels[labels.ScalingGroupKey] == "" && pclq.DeletionTimestamp == nil &&
				equalHash(pclq.Status.CurrentPodCliqueSetGenerationHash, hash) {
				cliques++
			}
		}
		for _, g := range obs.replica(r).scalingGroups {
			if g.DeletionTimestamp == nil && equalHash(g.Status.CurrentPodCliqueSetGenerationHash, hash) {
				groups++
			}
		}
	}
	return min(cliques, totalCliques), totalCliques, min(groups, totalGroups), totalGroups
}

func equalHash(have *string, want string) bool { return have != nil && *have == want }
