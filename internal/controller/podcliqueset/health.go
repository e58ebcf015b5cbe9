package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/scheduler"
)

// assessReplicas derives the health of every desired replica.
//
// For Inference, as in Grove, a replica's members are its standalone
// PodCliques and its scaling groups: a scaling group tolerates the loss of
// replicas above its minAvailable. For Training every PodClique is a member,
// grouped ones included: GREP-0285 restarts the replica when any of its
// PodCliques is breached, and the replica has succeeded only when all of
// them have.
func assessReplicas(pcs *copsev1alpha1.PodCliqueSet, observed *children) []replicaHealth {
	grouped := blueprint.GroupedCliques(pcs)
	training := pcs.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining
	standalone := 0
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !grouped[c.Name] {
			standalone++
		}
	}
	expected := map[int]int{}
	members := map[int][]member{}
	for r := range int(pcs.Spec.Replicas) {
		expected[r] = standalone
		if !training {
			expected[r] += len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)
		}
	}
	for i := range observed.podCliques {
		pclq := &observed.podCliques[i]
		if training || isStandalone(pcs, pclq) {
			members[replicaOf(pclq)] = append(members[replicaOf(pclq)], member{name: pclq.Name, conditions: pclq.Status.Conditions})
		}
	}
	for i := range observed.scalingGroups {
		g := &observed.scalingGroups[i]
		r := replicaOf(g)
		if training {
			// Every group replica's cliques are members of the replica.
			expected[r] += int(g.Spec.Replicas) * len(g.Spec.CliqueNames)
			continue
		}
		members[r] = append(members[r], member{name: g.Name, conditions: g.Status.Conditions})
	}
	if training {
		// A scaling group not created yet still counts, from its template.
		for r := range int(pcs.Spec.Replicas) {
			for _, cfg := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
				if !hasScalingGroup(observed, r, cfg.Name, pcs.Name) {
					expected[r] += int(scheduler.GroupReplicas(cfg)) * len(cfg.CliqueNames)
				}
			}
		}
	}
	out := make([]replicaHealth, 0, pcs.Spec.Replicas)
	for r := range int(pcs.Spec.Replicas) {
		out = append(out, assessReplica(r, expected[r], members[r]))
	}
	return out
}

func hasScalingGroup(observed *children, replica int, group, pcsName string) bool {
	name := naming.ScalingGroup(pcsName, replica, group)
	for i := range observed.scalingGroups {
		if observed.scalingGroups[i].Name == name {
			return true
		}
	}
	return false
}
