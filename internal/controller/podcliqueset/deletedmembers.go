package podcliqueset

import (
	"maps"
	"slices"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
)

// deletedMembers are the members of one Training replica's run that were
// deleted from outside, and when this controller confirmed it.
type deletedMembers struct {
	names []string
	at    time.Time
}

// runMemberNames are the PodCliqueScalingGroups and PodCliques one replica
// of a Training workload is made of: its sizes never change, so the names
// follow from the template.
func runMemberNames(pcs *copsev1alpha1.PodCliqueSet, replica int) []string {
	var out []string
	for _, clique := range pcs.StandaloneCliques() {
		out = append(out, naming.StandalonePodClique(pcs.Name, replica, clique.Name))
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		group := naming.ScalingGroup(pcs.Name, replica, g.Name)
		out = append(out, group)
		for j := range int(copsev1alpha1.ScalingGroupReplicas(g)) {
			for _, clique := range g.CliqueNames {
				out = append(out, naming.GroupedPodClique(group, j, clique))
			}
		}
	}
	return out
}

// missingRunMembers are the members of replica's current run (attempt)
// that the cache does not show alive: absent, being deleted, or (for a
// PodClique) controlled by none of the observed owners.
func missingRunMembers(pcs *copsev1alpha1.PodCliqueSet, obs *observed, replica int, attempt int32) []string {
	alive := map[string]bool{}
	run := obs.replica(replica).run(int(attempt))
	for _, g := range run.scalingGroups {
		if g.DeletionTimestamp.IsZero() {
			alive[g.Name] = true
		}
	}
	for _, pclq := range run.podCliques {
		if pclq.DeletionTimestamp.IsZero() {
			alive[pclq.Name] = true
		}
	}
	var out []string
	for _, name := range runMemberNames(pcs, replica) {
		if !alive[name] {
			out = append(out, name)
		}
	}
	return out
}

// replicasToCheckForDeletions are the Training replicas whose current run
// was whole (status.createdReplicaIndexes) and may have lost a member since:
// not being recreated, not succeeded, not suspended, the workload not
// ended. Others get no decision that a deletion could change.
func replicasToCheckForDeletions(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records) []int {
	if !rec.Training || rec.Suspended || rec.Ended {
		return nil
	}
	var out []int
	for r := range int(pcs.Spec.Replicas) {
		if state := rec.Replica(r, -1); state.RunCreated && !state.Succeeded && !state.Recreating {
			out = append(out, r)
		}
	}
	return out
}

// createdReplicas is status.createdReplicaIndexes after this pass: the
// recorded replicas, less those a recreation is under way for (their new
// run is not whole yet), plus those whose current run is whole now.
func createdReplicas(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, replicas []replicaAssessment, recreating map[int]bool) indexset.Set {
	out := indexset.Set{}
	maps.Copy(out, rec.Created)
	for _, a := range replicas {
		switch {
		case recreating[a.index]:
			delete(out, a.index)
		case a.complete:
			out.Add(a.index)
		}
	}
	for r := range out {
		if recreating[r] || r >= int(pcs.Spec.Replicas) {
			delete(out, r)
		}
	}
	return out
}

// sortedNames is names sorted, for messages.
func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}
