package trainjob_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/trainjob"
)

// ruledTorchRuntime is the namespace's torch-distributed runtime with the
// failure rules a GPU fleet wants, written as Kubeflow's runtimes can say
// them today (the pattern KEP-4162 proposes to generate): the node Job's
// pod failure policy fails the Job on a disruption (rule 0) and on exit 42
// (rule 1), and the JobSet's rules restart without counting on the first
// and fail the JobSet on the second. The JobSet backend runs them as they
// are; the PodCliqueSet backend translates them into its failure rules.
func (b backend) ruledTorchRuntime(ctx context.Context, namespace string, maxRestarts int32) {
	GinkgoHelper()
	rt := b.onBackend(runtimeCopy(namespace, "torch-distributed"))
	rt.Spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: maxRestarts, Rules: []jobsetv1alpha2.FailurePolicyRule{
		{Name: "infrastructure", Action: jobsetv1alpha2.RestartJobSetAndIgnoreMaxRestarts,
			OnJobFailureReasons: []string{string(batchv1.JobReasonPodFailurePolicy)}, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 0$"}},
		{Name: "bug", Action: jobsetv1alpha2.FailJobSet,
			OnJobFailureReasons: []string{string(batchv1.JobReasonPodFailurePolicy)}, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 1$"}},
	}}
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		rjob := &rt.Spec.Template.Spec.ReplicatedJobs[i]
		if rjob.Name != trainjob.NodeName {
			continue
		}
		rjob.Template.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionFailJob,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To(trainjob.NodeName),
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		}}
	}
	createRuntime(ctx, rt)
}

// restartsOf are the backend object's restart counters: every restart, and
// those that counted towards maxRestarts.
func (b backend) restartsOf(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) [2]int32 {
	if b.kind == trainerv1alpha1.RuntimeBackendJobSet {
		js, err := jobSetOf(ctx, tj)
		g.Expect(err).NotTo(HaveOccurred())
		return [2]int32{js.Status.Restarts, js.Status.RestartsCountTowardsMax}
	}
	pcs, err := podCliqueSetOf(ctx, tj)
	g.Expect(err).NotTo(HaveOccurred())
	return [2]int32{pcs.Status.RestartCount, pcs.Status.RestartsCountTowardsMax}
}

// replacementsOf waits until n node pods run that are none of first.
func (b backend) replacementsOf(ctx context.Context, ns string, first []corev1.Pod, n int) []corev1.Pod {
	GinkgoHelper()
	var out []corev1.Pod
	Eventually(func(g Gomega) {
		out = slices.DeleteFunc(b.pods(ctx, g, ns, trainjob.NodeName), func(p corev1.Pod) bool {
			return p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !framework.IsReady(&p) ||
				slices.ContainsFunc(first, func(old corev1.Pod) bool { return old.UID == p.UID })
		})
		g.Expect(out).To(HaveLen(n), "replacement pods running")
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return out
}

// restartThenComplete runs a TrainJob of 2 nodes on the ruled runtime
// with maxRestarts, fails its first node pod with fail, lets the
// replacements exit 0, and expects Complete with want restarts (every
// restart, and those counted towards maxRestarts).
func (b backend) restartThenComplete(ctx context.Context, namespace string, maxRestarts int32, fail func(*corev1.Pod), want [2]int32) {
	GinkgoHelper()
	ns := env.NewNamespace(ctx, namespace)
	b.ruledTorchRuntime(ctx, ns, maxRestarts)
	tj := torchTrainJob(ns, 2)
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	first := b.runningPods(ctx, ns, trainjob.NodeName, 2)
	fail(&first[0])

	finish(ctx, tj, b.replacementsOf(ctx, ns, first, 2))
	Eventually(func(g Gomega) [2]int32 { return b.restartsOf(ctx, g, tj) }).
		WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Equal(want), "restarts, counted towards maxRestarts")
}

// finish makes pods exit 0 and waits for Complete.
func finish(ctx context.Context, tj *trainerv1alpha1.TrainJob, pods []corev1.Pod) {
	GinkgoHelper()
	for i := range pods {
		env.MakePodExit(ctx, &pods[i], "0")
	}
	expectComplete(ctx, tj)
}

// failureRuleScenarios run on both backends with the same expected outcome.
var failureRuleScenarios = []struct {
	name string
	run  func(ctx context.Context, b backend)
}{
	{"restarts without spending maxRestarts (0) when a node pod is evicted (DisruptionTarget), then completes", func(ctx context.Context, b backend) {
		b.restartThenComplete(ctx, "rules-disrupted", 0, func(p *corev1.Pod) { env.EvictPod(ctx, p) }, [2]int32{1, 0})
	}},
	{"fails at once with FailJobSetFailurePolicyAction when a node exits 42, restarts left", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "rules-bug")
		b.ruledTorchRuntime(ctx, ns, 2)
		tj := torchTrainJob(ns, 2)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		pods := b.runningPods(ctx, ns, trainjob.NodeName, 2)
		env.MakePodExit(ctx, &pods[1], "42")

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobFailed).Reason).To(Equal(jobsetconstants.FailJobSetActionReason))
		Expect(b.restartsOf(ctx, Default, tj)).To(Equal([2]int32{0, 0}))
		b.expectNoPodsRunning(ctx, ns)
	}},
	{"restarts and counts a failure no rule matches (exit 1), then completes", func(ctx context.Context, b backend) {
		b.restartThenComplete(ctx, "rules-crash", 1, func(p *corev1.Pod) { env.MakePodExit(ctx, p, "1") }, [2]int32{1, 1})
	}},
}

// expectNoPodsRunning waits until no pod of the namespace runs.
func (b backend) expectNoPodsRunning(ctx context.Context, ns string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(slices.DeleteFunc(b.pods(ctx, g, ns, ""), func(p corev1.Pod) bool { return framework.IsTerminal(&p) })).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

var _ = Describe("A TrainJob's failure rules on each backend", Label("trainjob"), func() {
	for _, b := range backends {
		Context(fmt.Sprintf("on the %s backend", b.kind), func() {
			for _, s := range failureRuleScenarios {
				It(s.name, func(ctx context.Context) { s.run(ctx, b) })
			}
		})
	}
})
