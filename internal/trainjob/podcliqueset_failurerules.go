package trainjob

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Translating a runtime's failure handling to a Training PodCliqueSet's
// failure rules.
//
// On the JobSet backend a failed pod goes through two policies. Its Job
// (backoffLimit 0 on this backend, the only value it accepts) applies its
// podFailurePolicy: a FailJob rule fails the Job with reason PodFailurePolicy
// and a message naming the rule's index; Count, or no matching rule, fails it
// with reason BackoffLimitExceeded. JobSet then applies its failurePolicy
// rules to the failed Job (its reason, message and replicated job): the
// first that matches decides FailJobSet, RestartJobSet or
// RestartJobSetAndIgnoreMaxRestarts, and none restarts and counts.
//
// A PodCliqueSet's rules judge the pod itself, so the translation composes
// the two: for each replicated job (a clique) and each of its pod failure
// rules in order, one PodCliqueSet rule with the pod rule's requirement and
// the action the JobSet rules take on the Job failure it causes; then one
// for every other failure of the clique when JobSet's answer to
// BackoffLimitExceeded is not the default restart. The Job failure message
// a JobSet rule's onJobFailureMessagePatterns is matched against is the
// one Kubernetes' Job controller writes, with the pod's and container's
// names in it; a pattern whose answer depends on those names (or on which
// exit code of the rule failed) cannot be decided for a rule, and is
// refused. So are what has no equivalent: a pod failure rule that Ignores
// (the gang cannot lose a pod without a restart), and JobSet's RestartJob
// actions (a PodCliqueSet restarts the whole replica).

// The Job controller's failure reasons and messages (k8s.io/kubernetes
// pkg/controller/job), which JobSet's failure policy rules match.
const (
	jobReasonPodFailurePolicy     = string(batchv1.JobReasonPodFailurePolicy)
	jobReasonBackoffLimitExceeded = string(batchv1.JobReasonBackoffLimitExceeded)
	jobMessageBackoffLimit        = "Job has reached the specified backoff limit"
)

// sampleNames are two sets of names a Job failure message may hold; a
// pattern must answer the same for both.
var sampleNames = [2]struct{ namespace, pod, container string }{
	{"default", "job-0-node-0-abcde", "node"},
	{"team-ml-42", "x-1-launcher-9-zz9zz", "sidecar-7"},
}

// failureRulesFrom translates the JobSet's failure rules and its Jobs' pod
// failure policies into a Training PodCliqueSet's rules, and names what
// cannot be translated (field errors under specPath).
func failureRulesFrom(spec *jobsetv1alpha2.JobSetSpec, specPath *field.Path) ([]copsev1alpha1.FailureRule, field.ErrorList) {
	var jobSetRules []jobsetv1alpha2.FailurePolicyRule
	if spec.FailurePolicy != nil {
		jobSetRules = spec.FailurePolicy.Rules
	}
	rulesPath := specPath.Child("failurePolicy", "rules")
	var errs field.ErrorList
	for i, rule := range jobSetRules {
		if rule.Action == jobsetv1alpha2.RestartJob || rule.Action == jobsetv1alpha2.RestartJobAndIgnoreMaxRestarts {
			errs = append(errs, field.Forbidden(rulesPath.Index(i).Child("action"),
				notExpressible+": a PodCliqueSet restarts the whole replica, not one job"))
		}
		for j, pattern := range rule.OnJobFailureMessagePatterns {
			if _, err := regexp.Compile(pattern); err != nil {
				errs = append(errs, field.Invalid(rulesPath.Index(i).Child("onJobFailureMessagePatterns").Index(j), pattern, err.Error()))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var out []copsev1alpha1.FailureRule
	for i, rjob := range spec.ReplicatedJobs {
		jobPath := specPath.Child("replicatedJobs").Index(i).Child("template", "spec", "podFailurePolicy", "rules")
		rules, jobErrs := cliqueFailureRules(rjob, jobSetRules, jobPath, rulesPath)
		out = append(out, rules...)
		errs = append(errs, jobErrs...)
	}
	return out, errs
}

// cliqueFailureRules are the rules of one replicated job's clique.
func cliqueFailureRules(rjob jobsetv1alpha2.ReplicatedJob, jobSetRules []jobsetv1alpha2.FailurePolicyRule,
	podRulesPath, rulesPath *field.Path) ([]copsev1alpha1.FailureRule, field.ErrorList) {
	var out []copsev1alpha1.FailureRule
	var errs field.ErrorList
	if pfp := rjob.Template.Spec.PodFailurePolicy; pfp != nil {
		for i, podRule := range pfp.Rules {
			path := podRulesPath.Index(i)
			rule := copsev1alpha1.FailureRule{Name: ruleName(rjob.Name, fmt.Sprintf("pod-failure-%d", i)), TargetCliques: []string{rjob.Name}}
			messages, err := requirementOf(&rule, podRule, path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			reason := jobReasonPodFailurePolicy
			switch podRule.Action {
			case batchv1.PodFailurePolicyActionFailJob:
				for j, message := range messages {
					messages[j] = func(sample int) string {
						return message(sample) + fmt.Sprintf(" matching %s rule at index %d", podRule.Action, i)
					}
				}
			case batchv1.PodFailurePolicyActionCount:
				reason, messages = jobReasonBackoffLimitExceeded, []func(int) string{backoffLimitMessage}
			default:
				errs = append(errs, field.Forbidden(path.Child("action"), notExpressible+
					": a clique's pods are a gang, and losing one restarts its replica (a rule with action RestartJobSetAndIgnoreMaxRestarts on reason PodFailurePolicy expresses a restart that does not count)"))
				continue
			}
			action, err := jobSetAnswer(rjob.Name, reason, messages, jobSetRules, rulesPath)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rule.Action = action
			out = append(out, rule)
		}
	}
	action, err := jobSetAnswer(rjob.Name, jobReasonBackoffLimitExceeded, []func(int) string{backoffLimitMessage}, jobSetRules, rulesPath)
	switch {
	case err != nil:
		errs = append(errs, err)
	case action != copsev1alpha1.FailureActionRestartReplica:
		out = append(out, copsev1alpha1.FailureRule{Name: ruleName(rjob.Name, "any-failure"), TargetCliques: []string{rjob.Name}, Action: action})
	}
	return out, errs
}

func backoffLimitMessage(int) string { return jobMessageBackoffLimit }

// requirementOf sets rule's requirement from a pod failure rule's, and
// returns the Job failure messages (without the rule's index) it may
// cause, one per sample of names (sampleNames) and exit code.
func requirementOf(rule *copsev1alpha1.FailureRule, podRule batchv1.PodFailurePolicyRule, path *field.Path) ([]func(int) string, *field.Error) {
	switch {
	case podRule.OnExitCodes != nil:
		req := podRule.OnExitCodes
		rule.OnExitCodes = &copsev1alpha1.ExitCodesRequirement{ContainerName: req.ContainerName,
			Operator: copsev1alpha1.ExitCodesOperator(req.Operator), Values: slices.Clone(req.Values)}
		codes := slices.Clone(req.Values)
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn {
			codes = codesNotIn(req.Values)
		}
		var out []func(int) string
		for _, code := range codes {
			out = append(out, func(sample int) string {
				names := sampleNames[sample]
				container := ptr.Deref(req.ContainerName, names.container)
				return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d", container, names.namespace, names.pod, code)
			})
		}
		return out, nil
	case len(podRule.OnPodConditions) > 0:
		var out []func(int) string
		for _, c := range podRule.OnPodConditions {
			status := c.Status
			if status == "" {
				status = corev1.ConditionTrue
			}
			rule.OnPodConditions = append(rule.OnPodConditions, copsev1alpha1.PodConditionRequirement{Type: c.Type, Status: status})
			out = append(out, func(sample int) string {
				names := sampleNames[sample]
				return fmt.Sprintf("Pod %s/%s has condition %s", names.namespace, names.pod, c.Type)
			})
		}
		return out, nil
	}
	return nil, field.Required(path, "a pod failure rule needs onExitCodes or onPodConditions")
}

// codesNotIn are two exit codes outside values, to try a NotIn rule's
// messages with.
func codesNotIn(values []int32) []int32 {
	var out []int32
	for code := int32(1); code < 256 && len(out) < 2; code++ {
		if !slices.Contains(values, code) {
			out = append(out, code)
		}
	}
	return out
}

// jobSetAnswer is the action JobSet's rules take on a failure of job with
// reason and any of the messages (each for both samples of names): the
// first rule that matches, RestartReplica when none does. An error when the
// answer is not the same for every message.
func jobSetAnswer(job, reason string, messages []func(int) string, rules []jobsetv1alpha2.FailurePolicyRule,
	rulesPath *field.Path) (copsev1alpha1.FailureRuleAction, *field.Error) {
	first := -2
	for _, message := range messages {
		for sample := range sampleNames {
			i := firstMatchingRule(rules, job, reason, message(sample))
			if first != -2 && i != first {
				return "", field.Forbidden(rulesPath, fmt.Sprintf(
					"%s: which rule applies to a failure of replicated job %s (reason %s) depends on the pod's or container's names or on the exit code, "+
						"which a PodCliqueSet's rules do not see; make onJobFailureMessagePatterns match the whole rule (e.g. \"matching FailJob rule at index 0$\")",
					notExpressible, job, reason))
			}
			first = i
		}
	}
	if first < 0 {
		return copsev1alpha1.FailureActionRestartReplica, nil
	}
	switch rules[first].Action {
	case jobsetv1alpha2.FailJobSet:
		return copsev1alpha1.FailureActionFailWorkload, nil
	case jobsetv1alpha2.RestartJobSetAndIgnoreMaxRestarts:
		return copsev1alpha1.FailureActionRestartReplicaWithoutCount, nil
	default:
		return copsev1alpha1.FailureActionRestartReplica, nil
	}
}

// firstMatchingRule is the index of JobSet's first rule that matches a
// failure of job with reason and message, -1 when none does.
func firstMatchingRule(rules []jobsetv1alpha2.FailurePolicyRule, job, reason, message string) int {
	for i, rule := range rules {
		if len(rule.TargetReplicatedJobs) > 0 && !slices.Contains(rule.TargetReplicatedJobs, job) {
			continue
		}
		if len(rule.OnJobFailureReasons) > 0 && !slices.Contains(rule.OnJobFailureReasons, reason) {
			continue
		}
		if len(rule.OnJobFailureMessagePatterns) > 0 && !slices.ContainsFunc(rule.OnJobFailureMessagePatterns, func(p string) bool {
			return regexp.MustCompile(p).MatchString(message)
		}) {
			continue
		}
		return i
	}
	return -1
}

// ruleName is a PodCliqueSet rule's name: the clique and what it comes
// from, as a DNS label.
func ruleName(clique, from string) string {
	name := strings.Trim(strings.ToLower(clique+"-"+from), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}
