package scheduler

import (
	"sort"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
)

// Gang is a set of pods that must be scheduled together or not at all.
type Gang struct {
	// Name of the gang; the backend's object (a PodGroup) has this name and
	// PodCliques carry it in the grove.io/podgang label.
	Name string
	// Template groups gangs of the same shape: "base" for a replica's own
	// gang, "scaled-<group>" for a scaling-group replica above minAvailable.
	Template string
	// ReplicaIndex is the PodCliqueSet replica the gang belongs to.
	ReplicaIndex int
	// MinCount is how many of the gang's pods must fit at once.
	MinCount int32
}

// BaseTemplate is the template name of a replica's own gang.
const BaseTemplate = "base"

// ScaledTemplate is the template name of the gangs of one scaling group's
// replicas above minAvailable.
func ScaledTemplate(group string) string { return "scaled-" + group }

// DesiredGangs returns the gangs a PodCliqueSet needs, in a stable order.
//
// Each replica r has a base gang holding every standalone clique and the
// first minAvailable replicas of each scaling group; its minCount is the sum
// of their cliques' minAvailable. Scaling-group replicas at or above
// minAvailable are optional capacity: each gets a gang of its own, so the
// base gang never waits for them. groupReplicas gives the current replica
// count of each PodCliqueScalingGroup object (by object name); a group with
// no entry uses the template's count.
func DesiredGangs(pcs *copsev1alpha1.PodCliqueSet, groupReplicas map[string]int32) []Gang {
	template := pcs.Spec.Template
	cliqueMin := map[string]int32{}
	for _, clique := range template.Cliques {
		cliqueMin[clique.Name] = MinAvailable(clique.Spec)
	}
	grouped := map[string]bool{}
	for _, group := range template.PodCliqueScalingGroupConfigs {
		for _, name := range group.CliqueNames {
			grouped[name] = true
		}
	}
	var standaloneMin int32
	for _, clique := range template.Cliques {
		if !grouped[clique.Name] {
			standaloneMin += cliqueMin[clique.Name]
		}
	}

	var gangs []Gang
	for r := range int(pcs.Spec.Replicas) {
		base := Gang{Name: naming.BaseGang(pcs.Name, r), Template: BaseTemplate, ReplicaIndex: r, MinCount: standaloneMin}
		var scaled []Gang
		for _, group := range template.PodCliqueScalingGroupConfigs {
			var perGroupReplica int32
			for _, name := range group.CliqueNames {
				perGroupReplica += cliqueMin[name]
			}
			groupName := naming.ScalingGroup(pcs.Name, r, group.Name)
			replicas, ok := groupReplicas[groupName]
			if !ok {
				replicas = GroupReplicas(group)
			}
			minAvailable := min(GroupMinAvailable(group), replicas)
			base.MinCount += minAvailable * perGroupReplica
			for j := minAvailable; j < replicas; j++ {
				scaled = append(scaled, Gang{
					Name:         naming.ScaledGang(groupName, int(j)),
					Template:     ScaledTemplate(group.Name),
					ReplicaIndex: r,
					MinCount:     perGroupReplica,
				})
			}
		}
		gangs = append(gangs, base)
		gangs = append(gangs, scaled...)
	}
	return gangs
}

// GangOfGroupReplica names the gang the pods of scaling-group replica j join.
func GangOfGroupReplica(pcsName string, replica int, scalingGroup string, groupReplica, groupMinAvailable int32) string {
	if groupReplica < groupMinAvailable {
		return naming.BaseGang(pcsName, replica)
	}
	return naming.ScaledGang(scalingGroup, int(groupReplica))
}

// TemplateMinCounts returns each gang template's minCount, sorted by name.
func TemplateMinCounts(gangs []Gang) []Gang {
	byTemplate := map[string]Gang{}
	for _, g := range gangs {
		if _, seen := byTemplate[g.Template]; !seen {
			byTemplate[g.Template] = Gang{Template: g.Template, MinCount: g.MinCount}
		}
	}
	out := make([]Gang, 0, len(byTemplate))
	for _, g := range byTemplate {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Template < out[j].Template })
	return out
}

// MinAvailable is a clique's minAvailable, which defaults to its replicas.
func MinAvailable(spec grovecorev1alpha1.PodCliqueSpec) int32 {
	if spec.MinAvailable != nil {
		return *spec.MinAvailable
	}
	return spec.Replicas
}

// GroupReplicas is a scaling group's template replica count (default 1).
func GroupReplicas(group grovecorev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if group.Replicas != nil {
		return *group.Replicas
	}
	return 1
}

// GroupMinAvailable is a scaling group's minAvailable (default 1).
func GroupMinAvailable(group grovecorev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if group.MinAvailable != nil {
		return *group.MinAvailable
	}
	return 1
}
