package blueprint

import (
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// StartPredecessors returns, per clique template name, the cliques whose
// PodCliques must be Ready before the clique's containers start
// (spec.template.cliqueStartupType): none for AnyOrder (the default); the
// clique listed just before it for InOrder; its spec.startsAfter for
// Explicit. Cliques without predecessors have no entry. Names that are not
// cliques of the template are dropped (the webhook refuses them; a clique
// must never wait for something that will not come).
func StartPredecessors(startupType *grovecorev1alpha1.CliqueStartupType, cliques []*grovecorev1alpha1.PodCliqueTemplateSpec) map[string][]string {
	if startupType == nil {
		return nil
	}
	known := map[string]bool{}
	var names []string
	for _, c := range cliques {
		if c != nil && !known[c.Name] {
			known[c.Name] = true
			names = append(names, c.Name)
		}
	}
	out := map[string][]string{}
	switch *startupType {
	case grovecorev1alpha1.CliqueStartupTypeInOrder:
		for i := 1; i < len(names); i++ {
			out[names[i]] = []string{names[i-1]}
		}
	case grovecorev1alpha1.CliqueStartupTypeExplicit:
		for _, c := range cliques {
			if c == nil {
				continue
			}
			for _, after := range c.Spec.StartsAfter {
				if known[after] && after != c.Name && !slices.Contains(out[c.Name], after) {
					out[c.Name] = append(out[c.Name], after)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SuccessPredecessors returns, per clique template name, the cliques that
// must have succeeded before any of its pods is created
// (trainingSpec.startsAfterSucceeded). Only Training workloads have them.
func SuccessPredecessors(pcs *copsev1alpha1.PodCliqueSet) map[string][]string {
	if pcs.Spec.WorkloadType.OrDefault() != copsev1alpha1.WorkloadTypeTraining || pcs.Spec.TrainingSpec == nil {
		return nil
	}
	out := map[string][]string{}
	for _, dep := range pcs.Spec.TrainingSpec.StartsAfterSucceeded {
		for _, name := range dep.Cliques {
			if name != dep.Clique && !slices.Contains(out[dep.Clique], name) {
				out[dep.Clique] = append(out[dep.Clique], name)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// GatePredecessors returns, per clique template name, the cliques whose
// PodCliques must be ReadyOrDone before the clique's containers start: its
// StartPredecessors, less those it also waits on to succeed
// (SuccessPredecessors). An edge in both means the stronger one: the
// clique's pods are created only once the predecessor succeeded, so a gate
// on the same predecessor would add nothing but a container.
func GatePredecessors(pcs *copsev1alpha1.PodCliqueSet) map[string][]string {
	ready := StartPredecessors(pcs.Spec.Template.StartupType, pcs.Spec.Template.Cliques)
	success := SuccessPredecessors(pcs)
	out := map[string][]string{}
	for clique, preds := range ready {
		for _, pred := range preds {
			if !slices.Contains(success[clique], pred) {
				out[clique] = append(out[clique], pred)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// PreludeCliques are the clique templates some clique waits on to succeed,
// in template order. They are scheduled apart from the replica's gang.
func PreludeCliques(pcs *copsev1alpha1.PodCliqueSet) []string {
	waitedOn := map[string]bool{}
	for _, names := range SuccessPredecessors(pcs) {
		for _, n := range names {
			waitedOn[n] = true
		}
	}
	var out []string
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && waitedOn[c.Name] && !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// SiblingClique is what the start-order decisions need to know about one
// PodClique of the same PodCliqueSet replica and attempt.
type SiblingClique struct {
	// Template is the clique template it was made from.
	Template string
	// Grouped: it belongs to a scaling group; GroupReplica is its replica
	// in the group.
	Grouped       bool
	GroupReplica  int
	ReadyReplicas int
	// SucceededReplicas counts its pod indices that exited 0 (a Training
	// PodClique's status.succeededIndexes).
	SucceededReplicas int
	MinAvailable      int
	// Succeeded: the PodClique has the Succeeded condition.
	Succeeded bool
}

// ReadyOrDone reports whether a predecessor lets the cliques that start
// after it go: it has minAvailable pods ready or exited 0, or it succeeded
// as a whole. A pod that exited 0 did what the order waited for (JobSet
// counts a completed Job as ready too), so a clique created after its
// predecessor ended, or one whose predecessor exited before copse saw it
// Ready, is never held back for ever.
func (s SiblingClique) ReadyOrDone() bool {
	return s.Succeeded || s.ReadyReplicas+s.SucceededReplicas >= s.MinAvailable
}

// StartScope is the part of its replica a clique's start order is confined
// to. As in Grove, start order holds within a gang: a clique of a
// scaling-group replica at or beyond the group's minAvailable (a gang of its
// own) starts after only the cliques of its own group replica; a clique of
// the base gang starts after the whole base gang's.
type StartScope struct {
	// Scaled: the clique belongs to a scaling-group replica at or beyond the
	// group's minAvailable. Group is that scaling group's template name,
	// GroupReplica the clique's replica in it.
	Scaled       bool
	Group        string
	GroupReplica int
}

// ScopePredecessors narrows a clique's predecessors to its scope: a scaled
// clique keeps only the predecessors of its own scaling group (cliqueGroups
// maps a clique template to its group's template name); others keep all.
func ScopePredecessors(predecessors []string, scope StartScope, cliqueGroups map[string]string) []string {
	if !scope.Scaled {
		return predecessors
	}
	var out []string
	for _, pred := range predecessors {
		if cliqueGroups[pred] == scope.Group {
			out = append(out, pred)
		}
	}
	return out
}

// CliqueScalingGroups maps each clique template of a scaling group to the
// group's template name.
func CliqueScalingGroups(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	out := map[string]string{}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, name := range group.CliqueNames {
			out[name] = group.Name
		}
	}
	return out
}

// NotReadyPredecessors returns the predecessors that hold a clique's
// containers back: a standalone predecessor whose PodClique is missing or
// not ReadyOrDone, or a grouped one whose instances below the group's
// minAvailable are not all there and ReadyOrDone; for a scaled clique
// (scope), the predecessor's instance in the clique's own group replica.
// Empty means the startup gate may open. groupMinAvailable gives, per
// predecessor in a scaling group, the group's minAvailable (capped at its
// replicas).
func NotReadyPredecessors(predecessors []string, groupMinAvailable map[string]int, scope StartScope, siblings []SiblingClique) []string {
	var waiting []string
	for _, pred := range predecessors {
		need, grouped := groupMinAvailable[pred]
		readyInstances := map[int]bool{}
		standaloneReady := false
		for _, s := range siblings {
			if s.Template != pred {
				continue
			}
			ready := s.ReadyOrDone()
			switch {
			case grouped && scope.Scaled:
				if s.Grouped && s.GroupReplica == scope.GroupReplica && ready {
					readyInstances[s.GroupReplica] = true
				}
			case grouped:
				if s.Grouped && s.GroupReplica < need && ready {
					readyInstances[s.GroupReplica] = true
				}
			case ready:
				standaloneReady = true
			}
		}
		if scope.Scaled && grouped {
			need = 1
		}
		if (grouped && len(readyInstances) < need) || (!grouped && !standaloneReady) {
			waiting = append(waiting, pred)
		}
	}
	return waiting
}

// NotSucceededPredecessors returns the cliques of predecessors that have
// not succeeded yet in the replica's attempt: every PodClique made from the
// template must have the Succeeded condition, and at least one must exist.
func NotSucceededPredecessors(predecessors []string, siblings []SiblingClique) []string {
	var waiting []string
	for _, pred := range predecessors {
		found, all := false, true
		for _, s := range siblings {
			if s.Template == pred {
				found = true
				all = all && s.Succeeded
			}
		}
		if !found || !all {
			waiting = append(waiting, pred)
		}
	}
	return waiting
}

// GroupMinAvailable returns, for each clique template of a scaling group,
// how many of the group's replicas form its guaranteed part: the group's
// minAvailable, at most its replicas.
func GroupMinAvailable(pcs *copsev1alpha1.PodCliqueSet) map[string]int {
	out := map[string]int{}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		n := int(min(copsev1alpha1.ScalingGroupMinAvailable(group), copsev1alpha1.ScalingGroupReplicas(group)))
		for _, name := range group.CliqueNames {
			out[name] = n
		}
	}
	return out
}
