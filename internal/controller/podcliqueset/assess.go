package podcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/podstate"
)

// replicaAssessment is what the PodCliqueSet controller knows of one replica
// from its children's conditions and its pods.
type replicaAssessment struct {
	index int
	// complete: every member of the replica (see assessReplicas) exists.
	complete bool
	// available: complete, and no member reports MinAvailableBreached
	// other than False.
	available bool
	// breached: at least one member reports MinAvailableBreached=True;
	// breachedSince is when the breach began: the earliest such transition,
	// or, for Training, the earlier finish time of the first pod that
	// failed. For Inference the condition is only True for a member that
	// was available before, so a replica that never became healthy is never
	// torn down. For Training a failed pod is a breach at once.
	breached      bool
	breachedSince time.Time
	// breachedBy names the breached members, for events.
	breachedBy []string
	// started: every member of the replica's base gang has minAvailable
	// pods whose containers started (running, ready or not, or ended).
	// startedAt is the earliest container start among them.
	started   bool
	startedAt time.Time
	// succeeded (Training): the replica met trainingSpec.successPolicy, or
	// without one, is complete and every member's pods all exited 0;
	// succeededAt is when (see evaluateSuccessPolicy), succeededBy names
	// the succeeded PodCliques that met it.
	succeeded   bool
	succeededAt time.Time
	succeededBy []string
	// firstFailure is the root cause: the current run's pod that failed
	// first, if any, among those no failure rule ignores; verdict is the
	// failure rules' verdict on it (RestartReplica without one).
	firstFailure *podstate.Summary
	verdict      lifecycle.RuleVerdict
}

// member is one member of a replica, reduced to what replica health
// depends on.
type member struct {
	name string
	// template is the clique template the PodClique was made from; "" for
	// a scaling group member.
	template   string
	conditions []metav1.Condition
	// baseGang: the member's pods are in the replica's base gang.
	baseGang bool
	// The rest is set for PodClique members only.
	minAvailable int
	pods         []podstate.Summary
	completion   lifecycle.Completion
	// failedSince is set (Training) when the member's pods show it broken
	// by failures, which its condition may not say yet: the PodClique
	// controller writes it concurrently, and may not have seen the pods.
	failedSince *time.Time
	// ignored (Training) are its failed pods a failure rule with action
	// Ignore matches: no breach, no root cause; the PodClique replaces them.
	ignored map[types.UID]bool
}

// assessReplicas assesses every desired replica.
//
// For Inference, as in Grove, a replica's members for health are its
// standalone PodCliques and its scaling groups: a scaling group tolerates
// the loss of replicas above its minAvailable. For Training every PodClique
// of the replica's current run is a member, grouped ones included:
// GREP-0285 restarts the replica when any of its PodCliques is breached,
// and the replica has succeeded only when all of them have. Whether a
// replica started is judged on its base gang's PodCliques for both types.
func assessReplicas(pcs *copsev1alpha1.PodCliqueSet, obs *observed) []replicaAssessment {
	training := pcs.IsTraining()
	groupMinAvailable := obs.groupMinAvailable()
	out := make([]replicaAssessment, 0, pcs.Spec.Replicas)
	for r := range int(pcs.Spec.Replicas) {
		groupReplicas := obs.groupReplicasByTemplate(pcs, r)
		members, startMembers := replicaMembers(pcs, obs, r, groupMinAvailable)
		expected := len(pcs.StandaloneCliques()) + len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)
		if training {
			expected = pcs.MembersPerReplica(groupReplicas)
		}
		a := assessReplica(r, expected, members, training, pcs.SuccessPolicy(), pcs.FailurePolicy())
		if deleted, ok := obs.deletedMembers[r]; ok {
			// A member of a whole run was deleted from outside: the run
			// cannot go on as it was, so it is a breach, dated when it was
			// seen (the deletion records no time of its own).
			for _, name := range sortedNames(deleted.names) {
				a.noteBreach(name, "deleted from outside", deleted.at)
			}
			a.available = false
		}
		a.started, a.startedAt = replicaStarted(startMembers, expectedBaseMembers(pcs, groupReplicas))
		out = append(out, a)
	}
	return out
}

// replicaMembers are replica r's members for health (see assessReplicas)
// and its base gang's PodCliques, for its start. For Training only the
// current run counts.
func replicaMembers(pcs *copsev1alpha1.PodCliqueSet, obs *observed, r int, groupMinAvailable map[string]int32) (members, startMembers []member) {
	training := pcs.IsTraining()
	cliques := obs.replica(r).podCliques
	if training {
		cliques = obs.replica(r).run(int(obs.records.Attempt(r))).podCliques
	}
	for _, pclq := range cliques {
		m := member{name: pclq.Name, template: pclq.Labels[labels.CliqueTemplateKey], conditions: pclq.Status.Conditions,
			minAvailable: int(pclq.MinAvailable()), baseGang: true}
		for _, p := range obs.podsByClique[pclq.Name] {
			if p.ControllerUID == pclq.UID {
				m.pods = append(m.pods, p)
			}
		}
		if group := pclq.Labels[labels.ScalingGroupKey]; group != "" {
			j, _ := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
			m.baseGang = int32(j) < groupMinAvailable[group]
		}
		if training {
			m.completion = lifecycle.CliqueCompletion(int(pclq.Spec.Replicas), pclq.Status.SucceededIndexes, pclq.Status.LastSucceededTime, m.pods)
			m.ignored = lifecycle.NotJudged(pcs.FailurePolicy(), m.template, m.pods)
			notCounted := uidSet(pclq.Status.ReplacingPods)
			maps.Copy(notCounted, m.ignored)
			counts := lifecycle.CountPods(m.pods, true, m.completion.Succeeded.CountBelow(int(pclq.Spec.Replicas)), notCounted)
			if counts.BrokenByFailures(m.minAvailable) {
				since := counts.FailedSince()
				m.failedSince = &since
			}
		}
		if training || metav1.IsControlledBy(pclq, pcs) {
			members = append(members, m)
		}
		if m.baseGang {
			startMembers = append(startMembers, m)
		}
	}
	if !training {
		for _, g := range obs.replica(r).scalingGroups {
			members = append(members, member{name: g.Name, conditions: g.Status.Conditions})
		}
	}
	return members, startMembers
}

// assessReplica derives a replica's health, completion and root cause from
// its members. expected is how many members a complete replica has; policy
// is the Training workload's success policy (nil: every clique), rules its
// failure policy (nil: every failure restarts and counts).
func assessReplica(index, expected int, members []member, training bool, policy *copsev1alpha1.SuccessPolicy,
	rules *copsev1alpha1.TrainingFailurePolicy) replicaAssessment {
	a := replicaAssessment{index: index, complete: len(members) >= expected && expected > 0}
	allFalse := true
	var pods []podstate.Summary
	cliqueOf := map[string]string{}
	outcomes := make([]cliqueOutcome, 0, len(members))
	for _, m := range members {
		cliqueOf[m.name] = m.template
		for _, p := range m.pods {
			// An ignored failure, or disruption, is never the root
			// cause (lifecycle.IgnoredFailures).
			if !m.ignored[p.UID] {
				pods = append(pods, p)
			}
		}
		outcome := cliqueOutcome{name: m.name, template: m.template}
		switch {
		case meta.IsStatusConditionTrue(m.conditions, copsev1alpha1.ConditionTypeSucceeded):
			outcome.succeeded = true
			outcome.succeededAt = meta.FindStatusCondition(m.conditions, copsev1alpha1.ConditionTypeSucceeded).LastTransitionTime.Time
		case m.completion.Complete:
			outcome.succeeded, outcome.succeededAt = true, m.completion.LastSucceeded
		}
		outcomes = append(outcomes, outcome)
		cond := meta.FindStatusCondition(m.conditions, constants.ConditionTypeMinAvailableBreached)
		if cond == nil || cond.Status != metav1.ConditionFalse {
			allFalse = false
		}
		switch {
		case cond != nil && cond.Status == metav1.ConditionTrue:
			a.noteBreach(m.name, cond.Reason, cond.LastTransitionTime.Time)
		case m.failedSince != nil:
			allFalse = false
			a.noteBreach(m.name, "pods failed", *m.failedSince)
		}
	}
	a.available = a.complete && allFalse
	if training {
		verdict := evaluateSuccessPolicy(policy, a.complete, outcomes)
		a.succeeded, a.succeededAt, a.succeededBy = verdict.met, verdict.at, verdict.by
	}
	if training {
		a.firstFailure = lifecycle.FirstFailure(pods)
		// A breach without a failed pod (a member deleted from outside) is
		// no pod failure for the rules to judge: it restarts and counts.
		a.verdict = lifecycle.RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}
		if f := a.firstFailure; f != nil {
			a.verdict = lifecycle.JudgeFailure(rules, cliqueOf[f.PodClique], f.Failure)
		}
		if f := a.firstFailure; a.breached && f != nil && !f.FinishedAt.IsZero() && f.FinishedAt.Before(a.breachedSince) {
			// The pod's own finish time is when the breach happened; the
			// condition only says when the operator saw it.
			a.breachedSince = f.FinishedAt
		}
	}
	return a
}

// noteBreach adds a breached member; the replica's breach began with the
// earliest of its members'.
func (a *replicaAssessment) noteBreach(member, reason string, since time.Time) {
	if !a.breached || (!since.IsZero() && since.Before(a.breachedSince)) {
		a.breachedSince = since
	}
	a.breached = true
	a.breachedBy = append(a.breachedBy, fmt.Sprintf("%s (%s)", member, reason))
}

// replicaStarted reports whether every base-gang member has minAvailable
// pods that started (or indices that exited 0), and the earliest container
// start among them. expected is how many base-gang members there are.
func replicaStarted(members []member, expected int) (bool, time.Time) {
	if expected == 0 || len(members) < expected {
		return false, time.Time{}
	}
	var earliest time.Time
	for _, m := range members {
		startedIndices := indexset.Set{}
		for i := range m.completion.Succeeded {
			startedIndices.Add(i)
		}
		unindexed := 0
		for _, p := range m.pods {
			if !p.Started {
				continue
			}
			if earliest.IsZero() || p.StartedAt.Before(earliest) {
				earliest = p.StartedAt
			}
			if p.HasIndex {
				startedIndices.Add(p.Index)
			} else {
				unindexed++
			}
		}
		if len(startedIndices)+unindexed < max(m.minAvailable, 1) {
			return false, time.Time{}
		}
	}
	return true, earliest
}

// expectedBaseMembers is how many PodCliques a replica's base gang has:
// every standalone clique, and every member clique of the group replicas
// below the group's minAvailable.
func expectedBaseMembers(pcs *copsev1alpha1.PodCliqueSet, groupReplicas map[string]int32) int {
	n := len(pcs.StandaloneCliques())
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		replicas, ok := groupReplicas[g.Name]
		if !ok {
			replicas = copsev1alpha1.ScalingGroupReplicas(g)
		}
		n += int(min(replicas, copsev1alpha1.ScalingGroupMinAvailable(g))) * len(g.CliqueNames)
	}
	return n
}

// templateGroupName finds the template name of scaling group object name
// in replica r; "" when no template group has that name.
func templateGroupName(pcs *copsev1alpha1.PodCliqueSet, name string, r int) string {
	i := slices.IndexFunc(pcs.Spec.Template.PodCliqueScalingGroupConfigs, func(g grovecorev1alpha1.PodCliqueScalingGroupConfig) bool {
		return naming.ScalingGroup(pcs.Name, r, g.Name) == name
	})
	if i < 0 {
		return ""
	}
	return pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].Name
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		out[uid] = true
	}
	return out
}
