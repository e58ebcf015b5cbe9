package lifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

// RuleVerdict is what a Training workload's failurePolicy makes of one
// failed pod: the first rule that matches it, or, when none does, a
// restart that counts (Rule "").
type RuleVerdict struct {
	Rule   string
	Action copsev1alpha1.FailureRuleAction
}

// Counted reports whether the verdict spends a unit of maxRestarts.
func (v RuleVerdict) Counted() bool {
	return v.Action == copsev1alpha1.FailureActionRestartReplica
}

// defaultVerdict is the verdict of a failure no rule matches: what every
// failure did before failure rules existed.
var defaultVerdict = RuleVerdict{Action: copsev1alpha1.FailureActionRestartReplica}

// JudgeFailure applies the failure rules, in order, to a pod of the clique
// template clique that failed as failure says; the first rule that matches
// decides. A pod without a recorded failure (nil) is judged on its clique
// alone: only a rule without requirements can match it.
func JudgeFailure(policy *copsev1alpha1.TrainingFailurePolicy, clique string, failure *podstate.Failure) RuleVerdict {
	if policy == nil {
		return defaultVerdict
	}
	for _, rule := range policy.Rules {
		if ruleMatches(rule, clique, failure) {
			return RuleVerdict{Rule: rule.Name, Action: rule.Action}
		}
	}
	return defaultVerdict
}

// ruleMatches: the clique is a target (no targets: any) and every
// requirement the rule sets holds.
func ruleMatches(rule copsev1alpha1.FailureRule, clique string, failure *podstate.Failure) bool {
	if len(rule.TargetCliques) > 0 && !slices.Contains(rule.TargetCliques, clique) {
		return false
	}
	if rule.OnExitCodes != nil && (failure == nil || !exitCodesMatch(*rule.OnExitCodes, failure.Exits)) {
		return false
	}
	if len(rule.OnPodConditions) > 0 && (failure == nil || !conditionsMatch(rule.OnPodConditions, failure.Conditions)) {
		return false
	}
	return true
}

// exitCodesMatch is a Job podFailurePolicy's onExitCodes: some considered
// container (the named one, or any) exited with a code In (or NotIn) the
// values. Containers that exited 0 are never considered (exits holds only
// the non-zero ones).
func exitCodesMatch(req copsev1alpha1.ExitCodesRequirement, exits []podstate.ContainerExit) bool {
	for _, exit := range exits {
		if req.ContainerName != nil && *req.ContainerName != exit.Container {
			continue
		}
		if slices.Contains(req.Values, exit.Code) == (req.Operator == copsev1alpha1.ExitCodesIn) {
			return true
		}
	}
	return false
}

// conditionsMatch: the pod has one of the conditions with the status asked
// for (True when unset).
func conditionsMatch(reqs []copsev1alpha1.PodConditionRequirement, conditions map[corev1.PodConditionType]corev1.ConditionStatus) bool {
	for _, req := range reqs {
		want := req.Status
		if want == "" {
			want = corev1.ConditionTrue
		}
		if status, ok := conditions[req.Type]; ok && status == want {
			return true
		}
	}
	return false
}

// NotJudged are the pods whose failure the failure rules do not judge:
// those an Ignore rule matches (IgnoredFailures) and those that ended in an
// earlier attempt than the one they are of (a pod a restart in place kept
// whose old process exited before the kubelet restarted it:
// podstate.Summary.EndedInEarlierAttempt). Neither breaches its clique,
// restarts anything, or is a replica's root cause; its PodClique replaces
// it.
func NotJudged(policy *copsev1alpha1.TrainingFailurePolicy, clique string, pods []podstate.Summary) map[types.UID]bool {
	out := IgnoredFailures(policy, clique, pods)
	for _, p := range pods {
		if p.EndedInEarlierAttempt() {
			if out == nil {
				out = map[types.UID]bool{}
			}
			out[p.UID] = true
		}
	}
	return out
}

// IgnoredFailures are the failed or disrupted pods among pods (all of
// clique template clique) that a rule with action Ignore matches: they
// neither breach their clique nor restart anything, and are never a
// replica's root cause (FirstFailure), not even while a disrupted one is
// still ending; their PodClique replaces them.
func IgnoredFailures(policy *copsev1alpha1.TrainingFailurePolicy, clique string, pods []podstate.Summary) map[types.UID]bool {
	if policy == nil {
		return nil
	}
	var out map[types.UID]bool
	for _, p := range pods {
		if (!p.Failed() && !p.Disrupted) || JudgeFailure(policy, clique, p.Failure).Action != copsev1alpha1.FailureActionIgnore {
			continue
		}
		if out == nil {
			out = map[types.UID]bool{}
		}
		out[p.UID] = true
	}
	return out
}
