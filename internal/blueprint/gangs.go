package blueprint

import (
	"sort"
	"strings"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/topology"
)

// Gang is a set of pods that must be scheduled together or not at all.
// Which pods form a gang is copse's decision, whatever the scheduler; a
// scheduler backend (internal/scheduler) turns gangs into its own objects.
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
	// Basic: the pods are scheduled one by one, not as a gang (the prelude
	// of a Training replica); MinCount is then meaningless.
	Basic bool
	// TopologyKey is the node label key all of the gang's pods must share a
	// value of (GangTopologyKey); "" when the gang is not packed.
	TopologyKey string
}

// BaseTemplate is the template name of a replica's own gang.
const BaseTemplate = "base"

// ScaledTemplate is the template name of the gangs of one scaling group's
// replicas above minAvailable.
func ScaledTemplate(group string) string { return "scaled-" + group }

// PreludeTemplate is the template name of a Training replica's prelude: the
// standalone cliques other cliques wait on to succeed
// (trainingSpec.startsAfterSucceeded), scheduled without gang policy so that
// they never hold the replica's gang back, nor it them.
const PreludeTemplate = "prelude"

// ReplicaGangs returns the gangs of replica r, base gang first.
//
// The base gang holds every standalone clique (but the prelude's) and the first minAvailable
// replicas of each scaling group; its minCount is the sum of their cliques'
// minAvailable. Scaling-group replicas at or above minAvailable are optional
// capacity: each gets a gang of its own, so the base gang never waits for
// them. groupReplicas gives the current replica count of each
// PodCliqueScalingGroup object (by object name); a group with no entry uses
// the template's count. packing gives each gang its TopologyKey.
func ReplicaGangs(pcs *copsev1alpha1.PodCliqueSet, r int, groupReplicas map[string]int32, packing topology.Resolved) []Gang {
	template := pcs.Spec.Template
	base := Gang{Name: naming.BaseGang(pcs.Name, r), Template: BaseTemplate, ReplicaIndex: r,
		TopologyKey: GangTopologyKey(packing, BaseTemplate, "")}
	var prelude *Gang
	inPrelude := preludeSet(pcs)
	for _, clique := range pcs.StandaloneCliques() {
		if inPrelude[clique.Name] {
			if prelude == nil {
				prelude = &Gang{Name: naming.PreludeGang(pcs.Name, r), Template: PreludeTemplate, ReplicaIndex: r, Basic: true}
			}
			continue
		}
		base.MinCount += copsev1alpha1.CliqueMinAvailable(clique.Spec)
	}
	var scaled []Gang
	for _, group := range template.PodCliqueScalingGroupConfigs {
		var perGroupReplica int32
		for _, name := range group.CliqueNames {
			if c := pcs.CliqueTemplate(name); c != nil {
				perGroupReplica += copsev1alpha1.CliqueMinAvailable(c.Spec)
			}
		}
		groupName := naming.ScalingGroup(pcs.Name, r, group.Name)
		replicas, ok := groupReplicas[groupName]
		if !ok {
			replicas = copsev1alpha1.ScalingGroupReplicas(group)
		}
		minAvailable := min(copsev1alpha1.ScalingGroupMinAvailable(group), replicas)
		base.MinCount += minAvailable * perGroupReplica
		for j := minAvailable; j < replicas; j++ {
			scaled = append(scaled, Gang{
				Name:         naming.ScaledGang(groupName, int(j)),
				Template:     ScaledTemplate(group.Name),
				ReplicaIndex: r,
				MinCount:     perGroupReplica,
				TopologyKey:  GangTopologyKey(packing, ScaledTemplate(group.Name), group.Name),
			})
		}
	}
	gangs := append([]Gang{base}, scaled...)
	if prelude != nil {
		gangs = append(gangs, *prelude)
	}
	return gangs
}

// GangOfStandaloneClique names the gang the pods of a standalone clique
// join: the replica's prelude for a clique others wait on to succeed, else
// its base gang.
func GangOfStandaloneClique(pcs *copsev1alpha1.PodCliqueSet, replica int, clique string) string {
	if preludeSet(pcs)[clique] {
		return naming.PreludeGang(pcs.Name, replica)
	}
	return naming.BaseGang(pcs.Name, replica)
}

func preludeSet(pcs *copsev1alpha1.PodCliqueSet) map[string]bool {
	out := map[string]bool{}
	for _, name := range PreludeCliques(pcs) {
		out[name] = true
	}
	return out
}

// GangTopologyKey is the rule that maps packing onto gangs, the one place
// it is written: the node label key every pod of a gang of the given
// template must share (its PodGroup's topology constraint). It is the
// required key of the constraint Grove's PodGang of the same gang carries:
// the base gang takes the replica's required key; a scaled gang of scaling
// group group takes the group's constraint when the group sets one, so its
// required key ("" for a group that only prefers a domain), else the
// replica's; the prelude takes none. Narrower scopes inside a gang, and the
// replica's domain for a scaled gang (HeldToBaseGang), are pod affinity
// (TopologyAffinity).
func GangTopologyKey(packing topology.Resolved, template, group string) string {
	switch template {
	case BaseTemplate:
		return packing.Replica.RequiredKey
	case PreludeTemplate:
		return ""
	}
	if own := packing.ScalingGroups[group]; !own.IsZero() {
		return own.RequiredKey
	}
	return packing.Replica.RequiredKey
}

// HeldToBaseGang reports whether the pods of a gang of the given template
// are held in the domain of their replica's base gang, at the replica's
// required key: a scaled gang's are, when the replica is packed, so a
// replica packed at a level stays in one domain with its scaled gangs. Such
// a gang's pods are created once the base gang is placed, with a node
// selector for its domain (BaseGangHoldKey, BaseGangHold).
func HeldToBaseGang(packing topology.Resolved, template string) bool {
	return strings.HasPrefix(template, ScaledTemplate("")) && packing.Replica.RequiredKey != ""
}

// DesiredGangs returns the gangs of every replica, in a stable order.
func DesiredGangs(pcs *copsev1alpha1.PodCliqueSet, groupReplicas map[string]int32, packing topology.Resolved) []Gang {
	var gangs []Gang
	for r := range int(pcs.Spec.Replicas) {
		gangs = append(gangs, ReplicaGangs(pcs, r, groupReplicas, packing)...)
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
			byTemplate[g.Template] = Gang{Template: g.Template, MinCount: g.MinCount, Basic: g.Basic, TopologyKey: g.TopologyKey}
		}
	}
	out := make([]Gang, 0, len(byTemplate))
	for _, g := range byTemplate {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Template < out[j].Template })
	return out
}
