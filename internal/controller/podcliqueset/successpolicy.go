package podcliqueset

import (
	"fmt"
	"strings"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

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
