package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// The runtime pattern of KEP-4162's translation, written by hand: a Job's
// pod failure policy fails the Job on a disruption (index 0) and on exit
// 42 (index 1), and JobSet's rules tell the two apart by the message.
func kep4162Runtime() *jobsetv1alpha2.JobSetSpec {
	pfp := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("node"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
	}}
	spec := &jobsetv1alpha2.JobSetSpec{
		FailurePolicy: &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3, Rules: []jobsetv1alpha2.FailurePolicyRule{
			{Name: "infrastructure", Action: jobsetv1alpha2.RestartJobSetAndIgnoreMaxRestarts,
				OnJobFailureReasons: []string{"PodFailurePolicy"}, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 0$"}},
			{Name: "bug", Action: jobsetv1alpha2.FailJobSet,
				OnJobFailureReasons: []string{"PodFailurePolicy"}, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 1$"}},
		}},
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "node"}, {Name: "init"}},
	}
	spec.ReplicatedJobs[0].Template.Spec.PodFailurePolicy = pfp
	return spec
}

func TestFailureRulesFrom(t *testing.T) {
	disrupted := []copsev1alpha1.PodConditionRequirement{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	exit42 := &copsev1alpha1.ExitCodesRequirement{ContainerName: ptr.To("node"), Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}
	tests := []struct {
		name string
		spec func() *jobsetv1alpha2.JobSetSpec
		want []copsev1alpha1.FailureRule
	}{
		{"nothing to translate", func() *jobsetv1alpha2.JobSetSpec {
			return &jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "node"}}}
		}, nil},
		{"KEP-4162's pattern: each pod rule gets the action of the JobSet rule its Job failure meets", kep4162Runtime, []copsev1alpha1.FailureRule{
			{Name: "node-pod-failure-0", Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount, TargetCliques: []string{"node"}, OnPodConditions: disrupted},
			{Name: "node-pod-failure-1", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: []string{"node"}, OnExitCodes: exit42},
		}},
		{"a JobSet rule on BackoffLimitExceeded judges every other failure, per target job", func() *jobsetv1alpha2.JobSetSpec {
			spec := kep4162Runtime()
			spec.FailurePolicy.Rules = append(spec.FailurePolicy.Rules, jobsetv1alpha2.FailurePolicyRule{Name: "init-fails", Action: jobsetv1alpha2.FailJobSet,
				OnJobFailureReasons: []string{"BackoffLimitExceeded"}, TargetReplicatedJobs: []string{"init"}})
			return spec
		}, []copsev1alpha1.FailureRule{
			{Name: "node-pod-failure-0", Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount, TargetCliques: []string{"node"}, OnPodConditions: disrupted},
			{Name: "node-pod-failure-1", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: []string{"node"}, OnExitCodes: exit42},
			{Name: "init-any-failure", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: []string{"init"}},
		}},
		{"a pod rule that counts fails the Job on its backoff limit; with no JobSet rule for that, it restarts and counts", func() *jobsetv1alpha2.JobSetSpec {
			spec := kep4162Runtime()
			spec.ReplicatedJobs[0].Template.Spec.PodFailurePolicy.Rules[0].Action = batchv1.PodFailurePolicyActionCount
			return spec
		}, []copsev1alpha1.FailureRule{
			{Name: "node-pod-failure-0", Action: copsev1alpha1.FailureActionRestartReplica, TargetCliques: []string{"node"}, OnPodConditions: disrupted},
			{Name: "node-pod-failure-1", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: []string{"node"}, OnExitCodes: exit42},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := failureRulesFrom(tt.spec(), field.NewPath("spec"))
			if len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailureRulesFromRefusals: a message pattern that tells exit codes of
// one rule apart cannot be translated, and says how to fix it.
func TestFailureRulesFromRefusals(t *testing.T) {
	spec := kep4162Runtime()
	spec.ReplicatedJobs[0].Template.Spec.PodFailurePolicy.Rules[1].OnExitCodes.Values = []int32{42, 43}
	spec.FailurePolicy.Rules[1].OnJobFailureMessagePatterns = []string{"exit code 42"}
	_, errs := failureRulesFrom(spec, field.NewPath("spec"))
	if len(errs) != 1 || errs[0].Field != "spec.failurePolicy.rules" || errs[0].Type != field.ErrorTypeForbidden {
		t.Fatalf("errors %v, want one Forbidden on spec.failurePolicy.rules", errs)
	}
}
