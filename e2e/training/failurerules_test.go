package training_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// The recommended rules of docs/training.md: a disruption (preemption,
// eviction, a lost node) restarts without spending maxRestarts; exit 42, a
// bug the workload reports, fails it at once; a failure of the tolerant
// "eval" clique with exit code 3 is replaced and restarts nothing
// (flakyEvalRule, for workloads that have one).
const (
	ruleInfrastructure = "infrastructure"
	ruleBug            = "bug"
	ruleFlaky          = "flaky-eval"
)

func recommendedRules(maxUncounted int32) *copsev1alpha1.TrainingFailurePolicy {
	return &copsev1alpha1.TrainingFailurePolicy{
		MaxUncountedRestarts: ptr.To(maxUncounted),
		Rules: []copsev1alpha1.FailureRule{
			{Name: ruleInfrastructure, Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount,
				OnPodConditions: []copsev1alpha1.PodConditionRequirement{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			{Name: ruleBug, Action: copsev1alpha1.FailureActionFailWorkload,
				OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}},
		},
	}
}

// flakyEvalRule is the rule for a workload with an "eval" clique.
var flakyEvalRule = copsev1alpha1.FailureRule{Name: ruleFlaky, Action: copsev1alpha1.FailureActionIgnore, TargetCliques: []string{"eval"},
	OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{3}}}

// ruledWorkers is NewTrainingWorkers with the recommended rules, whose pods
// run until made to exit; maxRuntime bounds the Ignore rule.
func ruledWorkers(ns string, replicas, workers, maxRestarts, maxUncounted int32) *copsev1alpha1.PodCliqueSet {
	pcs := framework.NewTrainingWorkers(ns, "job", replicas, workers, "", maxRestarts)
	pcs.Spec.TrainingSpec.FailurePolicy = recommendedRules(maxUncounted)
	pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: 10 * time.Minute}
	return pcs
}

// restarts are the restart counters of a PodCliqueSet's status.
type restarts struct{ total, counted, uncounted int32 }

func restartsOf(pcs *copsev1alpha1.PodCliqueSet) restarts {
	return restarts{pcs.Status.RestartCount, pcs.Status.RestartsCountTowardsMax, pcs.Status.UncountedRestarts}
}

// finishAttempt makes the replica's pods of attempt exit 0 once running.
func finishAttempt(ctx context.Context, ns, replica, attempt string, n int) {
	GinkgoHelper()
	for _, p := range runningPods(ctx, ns, "job", replica, attempt, n) {
		env.MakePodExit(ctx, &p, "0")
	}
}

// waitEnd waits for the workload's terminal phase and returns it.
func waitEnd(ctx context.Context, ns string, phase copsev1alpha1.PodCliqueSetPhase) *copsev1alpha1.PodCliqueSet {
	GinkgoHelper()
	var pcs *copsev1alpha1.PodCliqueSet
	Eventually(func(g Gomega) {
		pcs = env.GetPodCliqueSet(ctx, g, ns, "job")
		g.Expect(pcs.Status.Phase).To(Equal(phase), "conditions %v", pcs.Status.Conditions)
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	return pcs
}

// expectRuleMatches checks status.failureRuleMatches, rule name -> count.
func expectRuleMatches(pcs *copsev1alpha1.PodCliqueSet, want map[string]int32) {
	GinkgoHelper()
	got := map[string]int32{}
	for _, m := range pcs.Status.FailureRuleMatches {
		got[m.Rule] = m.Count
	}
	Expect(got).To(Equal(want))
}

var _ = Describe("Training failure rules", Label("training"), func() {
	It("restarts a replica whose pod was evicted (DisruptionTarget) without spending maxRestarts, then succeeds", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-disruption")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 1, 2, 0, 2))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.EvictPod(ctx, &pods[0])

		By("restarting the replica as attempt 1 with an uncounted restart, maxRestarts 0 untouched")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(restartsOf(pcs)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
			g.Expect(pcs.Status.LastFailure).NotTo(BeNil())
			g.Expect(pcs.Status.LastFailure.Rule).To(Equal(ruleInfrastructure))
			g.Expect(pcs.Status.LastFailure.Action).To(Equal(copsev1alpha1.FailureActionRestartReplicaWithoutCount))
			g.Expect(pcs.Status.ReplicaRecreations).To(ConsistOf(HaveField("Reason", copsev1alpha1.RecreationReasonUncountedRestart)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		evicted := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&pods[0]), evicted); err == nil {
			Expect(evicted.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.DisruptionTarget), HaveField("Status", corev1.ConditionTrue))))
		}
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "ReplicaRestarting")).To(ConsistOf(HaveField("Note",
				And(ContainSubstring("uncounted restart 1 of 2 allowed"), ContainSubstring(fmt.Sprintf("failurePolicy rule %q", ruleInfrastructure))))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		finishAttempt(ctx, ns, "0", "1", 2)
		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(restartsOf(pcs)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
		expectRuleMatches(pcs, map[string]int32{ruleInfrastructure: 1})
	})

	It("fails at once with FailedByRule when a pod exits 42, restart budget left", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-bug")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 1, 2, 3, 2))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.MakePodExit(ctx, &pods[1], "42")

		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		cond := failedCondition(pcs)
		Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonFailedByRule))
		Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("failurePolicy rule %q (FailWorkload)", ruleBug)))
		Expect(restartsOf(pcs)).To(Equal(restarts{}))
		Expect(pcs.Status.LastFailure).To(HaveValue(And(HaveField("Rule", ruleBug), HaveField("ExitCode", HaveValue(BeEquivalentTo(42))))))
		expectRuleMatches(pcs, map[string]int32{ruleBug: 1})
		Expect(activePods(ctx, Default, ns, "job")).To(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "FailedByRule")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("restarts and counts a failure no rule matches (exit 1), then fails with MaxRestartsExceeded once maxRestarts is spent", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-default")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 1, 2, 1, 2))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.MakePodExit(ctx, &pods[0], "1")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(restartsOf(pcs)).To(Equal(restarts{total: 1, counted: 1, uncounted: 0}))
			g.Expect(pcs.Status.LastFailure).To(HaveValue(And(HaveField("Rule", ""), HaveField("Action", copsev1alpha1.FailureActionRestartReplica))))
			g.Expect(pcs.Status.ReplicaRecreations).To(ConsistOf(HaveField("Reason", copsev1alpha1.RecreationReasonTrainingRestart)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		pods = runningPods(ctx, ns, "job", "0", "1", 2)
		env.MakePodExit(ctx, &pods[1], "1")
		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		Expect(failedCondition(pcs).Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded))
		Expect(restartsOf(pcs)).To(Equal(restarts{total: 1, counted: 1, uncounted: 0}))
		Expect(pcs.Status.FailureRuleMatches).To(BeEmpty())
	})

	It("fails with MaxUncountedRestartsExceeded once the uncounted restarts run out, maxRestarts untouched", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-uncounted")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 1, 2, 5, 1))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.EvictPod(ctx, &pods[1])
		pods = runningPods(ctx, ns, "job", "0", "1", 2)
		env.EvictPod(ctx, &pods[0])

		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		cond := failedCondition(pcs)
		Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonMaxUncountedRestartsExceeded))
		Expect(cond.Message).To(ContainSubstring("after 1 of 1 allowed uncounted restarts"))
		Expect(restartsOf(pcs)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
		expectRuleMatches(pcs, map[string]int32{ruleInfrastructure: 2})
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "MaxUncountedRestartsExceeded")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("replaces a pod of a tolerant clique an Ignore rule matches, and judges a later crash on its own exit code", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-ignore")
		pcs := ruledWorkers(ns, 1, 1, 0, 2)
		eval := framework.CliqueTemplate("eval", 3, framework.PodSpec(0))
		eval.Spec.MinAvailable = ptr.To[int32](2)
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, eval)
		pcs.Spec.TrainingSpec.FailurePolicy.Rules = append(pcs.Spec.TrainingSpec.FailurePolicy.Rules, flakyEvalRule)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 4)
		pods := env.LivePods(ctx, Default, ns, "job", client.MatchingLabels{labels.PodCliqueKey: "job-0-eval", labels.PodIndexKey: "0"})
		Expect(pods).To(HaveLen(1))
		env.MakePodExit(ctx, &pods[0], "3")

		By("replacing the failed pod at its index, in the same attempt, with no restart and no breach")
		Eventually(func(g Gomega) {
			live := env.LivePods(ctx, g, ns, "job", client.MatchingLabels{labels.PodCliqueKey: "job-0-eval", labels.PodIndexKey: "0", labels.AttemptKey: "0"})
			g.Expect(live).To(HaveLen(1))
			g.Expect(live[0].UID).NotTo(Equal(pods[0].UID))
			g.Expect(framework.IsReady(&live[0])).To(BeTrue())
			pclq := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-0-eval"}, pclq)).To(Succeed())
			g.Expect(pclq.Status.PodReplacements).To(Equal(int32(1)))
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(restartsOf(got)).To(Equal(restarts{}))
			g.Expect(got.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("judging the trainer's exit 42, which failed after the ignored pod, as the root cause")
		trainer := env.LivePods(ctx, Default, ns, "job", client.MatchingLabels{labels.PodCliqueKey: "job-0-worker"})
		Expect(trainer).To(HaveLen(1))
		env.MakePodExit(ctx, &trainer[0], "42")
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		Expect(failedCondition(got).Reason).To(Equal(copsev1alpha1.ReasonFailedByRule))
		Expect(got.Status.LastFailure).To(HaveValue(And(HaveField("PodClique", "job-0-worker"), HaveField("Rule", ruleBug))))
		Expect(restartsOf(got)).To(Equal(restarts{}))
	})

	It("judges each failure by its own rule in a scaling group: an evicted grouped pod restarts uncounted, exit 42 then fails", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-group")
		pcs := ruledWorkers(ns, 1, 1, 2, 2)
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
		}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		env.EvictPod(ctx, &pods[1])
		Eventually(func(g Gomega) {
			g.Expect(restartsOf(env.GetPodCliqueSet(ctx, g, ns, "job"))).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		pods = runningPods(ctx, ns, "job", "0", "1", 2)
		env.MakePodExit(ctx, &pods[0], "42")
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseFailed)
		Expect(failedCondition(got).Reason).To(Equal(copsev1alpha1.ReasonFailedByRule))
		Expect(restartsOf(got)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
		expectRuleMatches(got, map[string]int32{ruleInfrastructure: 1, ruleBug: 1})
	})

	It("keeps the counts apart across 2 replicas: one evicted (uncounted), one exit 1 (counted), then succeeds", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-replicas")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 2, 1, 1, 1))).To(Succeed())
		replica0 := runningPods(ctx, ns, "job", "0", "0", 1)
		replica1 := runningPods(ctx, ns, "job", "1", "0", 1)
		env.EvictPod(ctx, &replica0[0])
		env.MakePodExit(ctx, &replica1[0], "1")

		finishAttempt(ctx, ns, "0", "1", 1)
		finishAttempt(ctx, ns, "1", "1", 1)
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(restartsOf(got)).To(Equal(restarts{total: 2, counted: 1, uncounted: 1}))
		Expect(got.Status.ReplicaRecreations).To(ConsistOf(
			And(HaveField("ReplicaIndex", int32(0)), HaveField("Reason", copsev1alpha1.RecreationReasonUncountedRestart)),
			And(HaveField("ReplicaIndex", int32(1)), HaveField("Reason", copsev1alpha1.RecreationReasonTrainingRestart))))
		expectRuleMatches(got, map[string]int32{ruleInfrastructure: 1})
	})
})

var _ = Describe("Failure rules admission", Label("training"), func() {
	It("refuses bad rules, naming the field and the rule (CEL in the CRD, and the webhook)", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-admission")
		rule := func(name string, action copsev1alpha1.FailureRuleAction) copsev1alpha1.FailureRule {
			return copsev1alpha1.FailureRule{Name: name, Action: action}
		}
		for _, tc := range []struct {
			name   string
			change func(*copsev1alpha1.PodCliqueSet)
			want   []string
		}{
			{"two rules of one name", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.FailurePolicy.Rules = append(p.Spec.TrainingSpec.FailurePolicy.Rules, rule(ruleBug, copsev1alpha1.FailureActionRestartReplica))
			}, []string{"spec.trainingSpec.failurePolicy.rules", "rules[].name must be unique"}},
			{"exit code 0 with In", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.FailurePolicy.Rules[1].OnExitCodes.Values = []int32{0, 42}
			}, []string{"onExitCodes.values", "must not contain 0 with operator In"}},
			{"Ignore without maxRuntime", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.MaxRuntime = nil
				p.Spec.TrainingSpec.FailurePolicy.Rules = append(p.Spec.TrainingSpec.FailurePolicy.Rules, rule("flaky", copsev1alpha1.FailureActionIgnore))
			}, []string{"spec.trainingSpec.maxRuntime", "required when a failurePolicy rule has action Ignore"}},
			{"Ignore on a gang clique", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.FailurePolicy.Rules = append(p.Spec.TrainingSpec.FailurePolicy.Rules, rule("flaky", copsev1alpha1.FailureActionIgnore))
			}, []string{"spec.trainingSpec.failurePolicy.rules[2].action", "Ignore applies only to cliques that tolerate failures", `clique "worker" has minAvailable 2 of 2`}},
			{"a target that is no clique", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.FailurePolicy.Rules[0].TargetCliques = []string{"trainer"}
			}, []string{"spec.trainingSpec.failurePolicy.rules[0].targetCliques[0]", "must name a clique of spec.template.cliques"}},
			{"an unknown action", func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec.FailurePolicy.Rules[0].Action = "RestartNode"
			}, []string{"spec.trainingSpec.failurePolicy.rules[0].action", "Unsupported value"}},
		} {
			pcs := ruledWorkers(ns, 1, 2, 0, 1)
			tc.change(pcs)
			err := env.Client.Create(ctx, pcs)
			Expect(err).To(HaveOccurred(), tc.name)
			for _, want := range tc.want {
				Expect(err.Error()).To(ContainSubstring(want), tc.name)
			}
		}
	})
})

var _ = Describe("Failure rules on a lost node", Label("training"), func() {
	It("restarts without counting when the node of a pod is deleted (the pod GC marks the pod DisruptionTarget)", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-node-gone")
		pool := map[string]string{"e2e.copse.dev/pool": ns}
		nodes, err := env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 7, Block: 0, Rack: 0, Count: 2, Labels: pool})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			for _, name := range nodes {
				_ = client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))
			}
		})
		pcs := ruledWorkers(ns, 1, 1, 0, 1)
		pcs.Spec.Template.Cliques[0].Spec.PodSpec.NodeSelector = pool
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 1)

		By("deleting the node the pod runs on")
		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Spec.NodeName}})).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(restartsOf(got)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
			g.Expect(got.Status.LastFailure).To(HaveValue(And(HaveField("Rule", ruleInfrastructure), HaveField("Node", pods[0].Spec.NodeName))))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())

		finishAttempt(ctx, ns, "0", "1", 1)
		got := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(restartsOf(got)).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))
	})
})

var _ = Describe("Failure rules across an operator crash", Label("training"), Ordered, func() {
	AfterEach(restartOperatorIfKilled)

	It("counts an uncounted restart once when the operator is down at the failure and killed during the restart", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "rule-crash")
		Expect(env.Client.Create(ctx, ruledWorkers(ns, 1, 2, 0, 3))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)

		By("evicting a pod while the operator is down")
		Expect(env.Operator.Kill()).To(Succeed())
		env.EvictPod(ctx, &pods[0])
		Eventually(func(g Gomega) {
			evicted := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&pods[0]), evicted)).To(Succeed())
			g.Expect(evicted.Status.Phase).To(Equal(corev1.PodFailed))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		pods = runningPods(ctx, ns, "job", "0", "1", 2)
		Expect(restartsOf(env.GetPodCliqueSet(ctx, Default, ns, "job"))).To(Equal(restarts{total: 1, counted: 0, uncounted: 1}))

		By("killing the operator between the recorded restart and the deletion of the old run")
		cliqueKey := client.ObjectKey{Namespace: ns, Name: "job-0-worker"}
		setHold(ctx, cliqueKey, true)
		env.EvictPod(ctx, &pods[1])
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(restartsOf(pcs)).To(Equal(restarts{total: 2, counted: 0, uncounted: 2}))
			g.Expect(pcs.Status.ReplicaRecreations).To(ConsistOf(HaveField("CompletedAt", BeNil())))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Kill()).To(Succeed())
		setHold(ctx, cliqueKey, false)
		time.Sleep(2 * time.Second)
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		finishAttempt(ctx, ns, "0", "2", 2)
		pcs := waitEnd(ctx, ns, copsev1alpha1.PodCliqueSetPhaseSucceeded)
		Expect(restartsOf(pcs)).To(Equal(restarts{total: 2, counted: 0, uncounted: 2}))
		expectRuleMatches(pcs, map[string]int32{ruleInfrastructure: 2})
		expectNoOrphans(ctx, ns, "job")
	})
})
