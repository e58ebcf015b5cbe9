package podcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
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
	groupMinAvailable := obs.groupMinAvailable
	out := make([]replicaAssessment, 0, pcs.Spec.Replicas)
	for r := range int(pcs.Spec.Replicas) {
		members, startMembers := replicaMembers(pcs, obs, r, groupMinAvailable)
		expected := len(pcs.StandaloneCliques()) + len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)
		if training {
			expected = obs.replicas[r].members
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
		a.started, a.startedAt = replicaStarted(startMembers, obs.replicas[r].baseMembers)
		out = append(out, a)
	}
	return out
}

// replicaMembers are replica r's members for health (see assessReplicas)
// and its base gang's PodCliques, for its start. For Training only the
// current run counts.
func replicaMembers(pcs *copsev1alpha1.PodCliqueSet, obs *observed, r int, groupMinAvailable map[string]int32) (members, startMembers []member) {
	training := pcs.IsTraining()
	cliques := obs.replicas[r].podCliques
	if training {
		cliques = obs.replicas[r].runs[int(obs.records.Attempt(r))].podCliques
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
		for _, g := range obs.replicas[r].scalingGroups {
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

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		out[uid] = true
	}
	return out
}

// cliqueOutcome is one PodClique of a replica's current run, reduced to
// what the success policy reads.
type cliqueOutcome struct {
	// name is the PodClique's name; template is the clique template it was
	// made from (its copse.dev/clique label), grouped instances included.
	name, template string
	// succeeded: the PodClique has the Succeeded condition (or its pods show
	// every index exited 0); succeededAt is when.
	succeeded   bool
	succeededAt time.Time
}

// policyVerdict says whether a replica met its success criteria.
type policyVerdict struct {
	met bool
	// at is when the criteria were first met: the last target to succeed
	// for All, the first for Any.
	at time.Time
	// by names the succeeded target PodCliques.
	by []string
}

// evaluateSuccessPolicy decides whether one replica met policy, given its
// current run's PodCliques and whether every PodClique the replica should
// have exists (complete). The targets are the PodCliques made from the
// policy's target templates, all of them when it lists none. All: the
// replica is complete and every target succeeded. Any: a target succeeded.
// A nil policy is today's rule, All of every clique.
func evaluateSuccessPolicy(policy *copsev1alpha1.SuccessPolicy, complete bool, cliques []cliqueOutcome) policyVerdict {
	var targets map[string]bool
	if policy != nil && len(policy.TargetCliques) > 0 {
		targets = map[string]bool{}
		for _, name := range policy.TargetCliques {
			targets[name] = true
		}
	}
	anyOf := operatorOf(policy) == copsev1alpha1.SuccessPolicyOperatorAny
	var v policyVerdict
	matched, succeeded := 0, 0
	for _, c := range cliques {
		if targets != nil && !targets[c.template] {
			continue
		}
		matched++
		if !c.succeeded {
			continue
		}
		succeeded++
		v.by = append(v.by, c.name)
		if v.at.IsZero() || (anyOf && c.succeededAt.Before(v.at)) || (!anyOf && c.succeededAt.After(v.at)) {
			v.at = c.succeededAt
		}
	}
	if anyOf {
		v.met = succeeded > 0
	} else {
		v.met = complete && matched > 0 && succeeded == matched
	}
	if !v.met {
		return policyVerdict{}
	}
	return v
}

// describeSuccessPolicy is how a condition message names the policy.
func describeSuccessPolicy(policy *copsev1alpha1.SuccessPolicy) string {
	targets := "every clique"
	if len(policy.TargetCliques) > 0 {
		targets = fmt.Sprintf("cliques %s", strings.Join(policy.TargetCliques, ", "))
	}
	return fmt.Sprintf("%s of %s", operatorOf(policy), targets)
}

func operatorOf(policy *copsev1alpha1.SuccessPolicy) copsev1alpha1.SuccessPolicyOperator {
	if policy == nil || policy.Operator == "" {
		return copsev1alpha1.SuccessPolicyOperatorAll
	}
	return policy.Operator
}

// recreationProgress is what this pass found of the recorded recreations.
type recreationProgress struct {
	// inProgress holds every replica with an unfinished recreation; its new
	// objects and pods are not created until the completion is recorded.
	inProgress map[int]bool
	// finished holds the replicas whose old run is entirely gone: every
	// recorded object and every pod of an earlier attempt.
	finished map[int]bool
	// remaining counts, per replica in progress, the objects and pods of the
	// old run still present.
	remaining map[int]int
	// barrierLifted holds the replicas restarted in place whose barrier
	// lifts now: the recreation completed, and no pod runs the old attempt.
	barrierLifted map[int]bool
}

// assessRecreations checks each recorded, unfinished recreation against
// what exists. A recreation is finished only when the old run's pods are
// gone too, not just its PodCliques and gangs: the new run's pods never
// meet the old run's, and the new gang never counts a dying pod.
//
// A restart in place moves the pods it keeps to the new attempt (they are
// no old-run pods then) and deletes the rest, so it finishes by the same
// rule. Its barrier lifts once it is finished and no pod runs the old
// attempt (barrierLifted).
func assessRecreations(recs []copsev1alpha1.ReplicaRecreation, objectUIDs map[types.UID]bool, pods []podstate.Summary) recreationProgress {
	p := recreationProgress{inProgress: map[int]bool{}, finished: map[int]bool{}, remaining: map[int]int{}, barrierLifted: map[int]bool{}}
	for _, rec := range recs {
		replica := int(rec.ReplicaIndex)
		if rec.CompletedAt != nil {
			if rec.InPlace && rec.BarrierLiftedAt == nil && barrierLifted(replicaPods(pods, replica), rec.Attempt) {
				p.barrierLifted[replica] = true
			}
			continue
		}
		p.inProgress[replica] = true
		remaining := 0
		for _, uid := range rec.Deleting {
			if objectUIDs[uid] {
				remaining++
			}
		}
		remaining += len(oldRunPods(pods, replica, rec.Attempt))
		if remaining == 0 {
			p.finished[replica] = true
		} else {
			p.remaining[replica] = remaining
		}
	}
	return p
}

// replicaPods are the replica's pods, of every attempt.
func replicaPods(pods []podstate.Summary, replica int) []podstate.Summary {
	var out []podstate.Summary
	for _, pod := range pods {
		if pod.Replica == replica {
			out = append(out, pod)
		}
	}
	return out
}

// oldRunPods are the replica's pods of attempts before attempt.
func oldRunPods(pods []podstate.Summary, replica int, attempt int32) []podstate.Summary {
	var out []podstate.Summary
	for _, pod := range pods {
		if pod.Replica == replica && pod.Attempt < int(attempt) {
			out = append(out, pod)
		}
	}
	return out
}

// barrierLifted reports whether no pod of the replica runs an attempt
// before attempt any more: every pod of an earlier attempt has ended, and
// every pod adopted into attempt (its gate closed) is held at its gate, its
// old containers gone, or has ended.
func barrierLifted(pods []podstate.Summary, attempt int32) bool {
	for _, p := range pods {
		switch {
		case p.Attempt < int(attempt) && p.HoldsNode():
			return false
		case p.Attempt == int(attempt) && p.StartupGate == labels.StartupGateClosed && !p.GateHolding && !p.Terminal():
			return false
		}
	}
	return true
}

// sortedNames is names sorted, for messages.
func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}
