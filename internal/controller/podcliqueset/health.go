package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

// assessReplicas derives the health of every desired replica from the
// conditions of its standalone PodCliques and scaling groups.
func assessReplicas(pcs *copsev1alpha1.PodCliqueSet, observed *children) []replicaHealth {
	grouped := blueprint.GroupedCliques(pcs)
	expected := len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !grouped[c.Name] {
			expected++
		}
	}
	members := map[int][]member{}
	for i := range observed.podCliques {
		pclq := &observed.podCliques[i]
		if isStandalone(pcs, pclq) {
			members[replicaOf(pclq)] = append(members[replicaOf(pclq)], member{name: pclq.Name, conditions: pclq.Status.Conditions})
		}
	}
	for i := range observed.scalingGroups {
		g := &observed.scalingGroups[i]
		members[replicaOf(g)] = append(members[replicaOf(g)], member{name: g.Name, conditions: g.Status.Conditions})
	}
	out := make([]replicaHealth, 0, pcs.Spec.Replicas)
	for r := range int(pcs.Spec.Replicas) {
		out = append(out, assessReplica(r, expected, members[r]))
	}
	return out
}
