package podcliqueset

import (
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// rolloutInputsOf gathers decideRollout's inputs from this pass's
// observations. recreating holds the replicas with a recreation under way
// or decided this pass.
func rolloutInputsOf(pcs *copsev1alpha1.PodCliqueSet, obs *observed, assessed []replicaAssessment,
	recreating map[int]bool, now time.Time) rolloutInputs {
	return rolloutInputs{
		training:     pcs.IsTraining(),
		onDelete:     onDelete(pcs),
		suspended:    pcs.IsSuspended(),
		recordedHash: pcs.Status.CurrentGenerationHash,
		computedHash: generationhash.GenerationHash(pcs),
		progress:     pcs.Status.UpdateProgress,
		replicas:     rolloutReplicasOf(pcs, obs, assessed, recreating),
		now:          now,
	}
}

// onDelete: the PodCliqueSet's update strategy is OnDelete (the default
// is RollingRecreate).
func onDelete(pcs *copsev1alpha1.PodCliqueSet) bool {
	return pcs.UpdateStrategyType() == grovecorev1alpha1.OnDeleteStrategy
}

// templateHashes are the pod template hashes of the PodCliqueSet's
// cliques, by clique name.
func templateHashes(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	out := map[string]string{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			out[clique.Name] = generationhash.PodTemplateHash(pcs, clique)
		}
	}
	return out
}

// rolloutReplicasOf reduces each replica below spec.replicas to its
// current run's PodCliques and pods, with the template hash each should
// carry.
func rolloutReplicasOf(pcs *copsev1alpha1.PodCliqueSet, obs *observed, assessed []replicaAssessment, recreating map[int]bool) []rolloutReplica {
	hashes := templateHashes(pcs)
	groupMinAvailable := obs.groupMinAvailable()
	out := make([]rolloutReplica, int(pcs.Spec.Replicas))
	for r := range out {
		out[r] = rolloutReplica{index: r, recreating: recreating[r]}
		if r < len(assessed) {
			out[r].breached, out[r].available = assessed[r].breached, assessed[r].available
		}
		for _, pclq := range obs.replica(r).run(int(obs.records.Attempt(r))).podCliques {
			if !pclq.DeletionTimestamp.IsZero() {
				continue
			}
			c, scheduled := rolloutCliqueOf(pclq, hashes, groupMinAvailable, obs.podsByClique[pclq.Name])
			out[r].scheduledPods += scheduled
			out[r].cliques = append(out[r].cliques, c)
		}
		out[r].complete = len(out[r].cliques) >= pcs.MembersPerReplica(obs.groupReplicasByTemplate(pcs, r))
	}
	return out
}

// rolloutCliqueOf reduces one PodClique of a replica's current run and its
// pods to what the rollout needs; scheduled counts its pods on nodes.
func rolloutCliqueOf(pclq *copsev1alpha1.PodClique, hashes map[string]string, groupMinAvailable map[string]int32,
	pods []podstate.Summary) (c rolloutClique, scheduled int) {
	expected := hashes[pclq.Labels[labels.CliqueTemplateKey]]
	c = rolloutClique{
		name:         pclq.Name,
		gang:         pclq.Labels[labels.PodGangKey],
		base:         true,
		minAvailable: int(min(pclq.MinAvailable(), pclq.Spec.Replicas)),
		specCurrent:  pclq.Labels[labels.PodTemplateHashKey] == expected,
	}
	if group := pclq.Labels[labels.ScalingGroupKey]; group != "" {
		j, _ := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
		c.group, c.groupReplica, c.base = group, j, int32(j) < groupMinAvailable[group]
	}
	for _, p := range pods {
		if p.ControllerUID != pclq.UID {
			continue
		}
		if p.Scheduled && p.HoldsNode() {
			scheduled++
		}
		if !p.Active() {
			continue
		}
		switch {
		case p.TemplateHash != expected:
			c.oldPods = append(c.oldPods, p)
		case p.Ready:
			c.readyUpdated++
		}
		if p.Ready {
			c.ready++
		}
	}
	return c, scheduled
}
