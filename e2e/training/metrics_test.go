package training_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

// The metrics are scraped from the operator's endpoint and compared with
// exact values: those of the namespace's own series (the counters live as
// long as the operator process, and the other specs of the suite use other
// namespaces), derived from the workloads' durable status.
var _ = Describe("Workload metrics", Label("training"), func() {
	It("count a scripted lifecycle exactly: a success, a restart, a failure, an unschedulable gang and a blocked start holding a GPU", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "metrics")
		ok := framework.NewTrainingWorkers(ns, "ok", 1, 2, "2s", 1)
		restarted := framework.NewTrainingWorkers(ns, "restarted", 1, 1, "2s", 1)
		restarted.Spec.Template.Cliques[0].Annotations[cluster.AnnotationExitCodesByAttempt] = "1,0"
		restarted.Spec.Template.Cliques[0].Spec.PodSpec = framework.PodSpec(2)
		restarted.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		failed := framework.NewTrainingWorkers(ns, "failed", 1, 1, "2s", 0)
		failed.Spec.Template.Cliques[0].Annotations[cluster.AnnotationExitCode] = "1"
		unplaceable := framework.NewTrainingWorkers(ns, "unplaceable", 1, 1, "", 1)
		unplaceable.Spec.Template.Cliques[0].Spec.PodSpec.NodeSelector = nowhere
		// gated holds a GPU while its second clique waits, InOrder, for a
		// first clique that never becomes Ready.
		first := gatedClique("a", 1, true, true)
		first.Spec.PodSpec = framework.PodSpec(1)
		first.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		gated := framework.NewPodCliqueSet(ns, "gated", 1, first, gatedClique("b", 1, false, true))
		gated.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		gated.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
		gated.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		for _, pcs := range []*copsev1alpha1.PodCliqueSet{ok, restarted, failed, unplaceable, gated} {
			Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		}

		By("running them to their ends, the unschedulable one reported")
		ended := map[string]*copsev1alpha1.PodCliqueSet{}
		Eventually(func(g Gomega) {
			for name, phase := range map[string]copsev1alpha1.PodCliqueSetPhase{
				"ok": copsev1alpha1.PodCliqueSetPhaseSucceeded, "restarted": copsev1alpha1.PodCliqueSetPhaseSucceeded, "failed": copsev1alpha1.PodCliqueSetPhaseFailed,
			} {
				ended[name] = env.GetPodCliqueSet(ctx, g, ns, name)
				g.Expect(ended[name].Status.Phase).To(Equal(phase), "PodCliqueSet %s", name)
			}
			g.Expect(gangsScheduled(ctx, g, ns, "unplaceable")).To(And(Not(BeNil()),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", copsev1alpha1.ReasonGangUnschedulable)))
			expectBlocked(ctx, g, ns, "gated-0-b", copsev1alpha1.ReasonWaitingForReady, "a")
			g.Expect(cliquePods(ctx, g, ns, "gated", "a")).To(ConsistOf(HaveField("Spec.NodeName", Not(BeEmpty()))))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		ended["gated"] = env.GetPodCliqueSet(ctx, Default, ns, "gated")
		ended["unplaceable"] = env.GetPodCliqueSet(ctx, Default, ns, "unplaceable")
		phases := map[string]float64{}
		for _, pcs := range ended {
			phases["Training/"+string(pcs.Status.Phase)]++
		}
		Expect(ended["restarted"].Status.RestartCount).To(Equal(int32(1)))
		started := 0
		for _, pcs := range ended {
			if pcs.Status.StartTime != nil {
				started++
			}
		}
		failedRuns := 0
		if ended["failed"].Status.StartTime != nil {
			failedRuns = 1
		}

		By("scraping exact values")
		in := map[string]string{"namespace": ns}
		with := func(pairs ...string) map[string]string {
			out := map[string]string{"namespace": ns}
			for i := 0; i+1 < len(pairs); i += 2 {
				out[pairs[i]] = pairs[i+1]
			}
			return out
		}
		Eventually(func(g Gomega) {
			m, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.SumBy("copse_podcliquesets", in, "workload_type", "phase")).To(Equal(phases))
			g.Expect(m.SumBy("copse_gpus_bound", in, "phase", "suspended")).To(Equal(map[string]float64{
				string(ended["gated"].Status.Phase) + "/false": 1}), "gated's first pod holds one GPU")
			g.Expect(m.SumBy("copse_podcliques_startup_blocked", in, "reason")).To(Equal(map[string]float64{"WaitingForReady": 1}))
			g.Expect(m.SumBy("copse_podcliquesets_unschedulable", in, "reason")).To(Equal(map[string]float64{"Unschedulable": 1}))
			g.Expect(m.SumBy("copse_replica_recreations_total", in, "reason", "in_place")).To(Equal(map[string]float64{"TrainingRestart/false": 1}))
			g.Expect(m.Sum("copse_podcliqueset_phase_transitions_total", with("workload_type", "Training", "phase", "Succeeded"))).To(Equal(2.0))
			g.Expect(m.Sum("copse_podcliqueset_phase_transitions_total", with("workload_type", "Training", "phase", "Failed"))).To(Equal(1.0))
			g.Expect(m.Sum("copse_podcliqueset_phase_transitions_total", with("workload_type", "Training", "phase", "Pending"))).To(Equal(5.0),
				"every workload's first status write is Pending")
			g.Expect(m.Sum("copse_podcliqueset_time_to_running_seconds", with("workload_type", "Training"))).To(Equal(float64(started)),
				"one observation per workload that started")
			g.Expect(m.Sum("copse_training_run_duration_seconds", with("outcome", "Succeeded"))).To(Equal(2.0))
			g.Expect(m.Sum("copse_training_run_duration_seconds", with("outcome", "Failed"))).To(Equal(float64(failedRuns)))
			g.Expect(m.HistogramSum("copse_training_run_duration_seconds", with("outcome", "Succeeded"))).To(BeNumerically(">=", 4),
				"two runs of at least 2s each")
			// restarted's first run: one pod of 2 GPUs, which ran its 2s
			// (and at most until the restart was decided) before it failed.
			restart := ended["restarted"].Status.ReplicaRecreations[0].StartedAt.Sub(ended["restarted"].CreationTimestamp.Time).Seconds()
			g.Expect(m.SumBy("copse_gpu_seconds_lost_total", in, "reason")).To(HaveKeyWithValue("TrainingRestart",
				And(BeNumerically(">=", 2*2), BeNumerically("<=", 2*(restart+1)))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("finding controller-runtime's metrics the chart's dashboard and alert rules use in the operator's scrape")
		// copse's own are checked against internal/metrics by
		// charts/copse's tests: a histogram that observed nothing yet is
		// not in a scrape.
		m, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
		Expect(err).NotTo(HaveOccurred())
		for _, name := range chartMetricNames() {
			Expect(m).To(HaveKey(name), "the chart uses %s, which the operator does not serve", name)
		}
	})
})

// chartMetricNames are the metric families of controller-runtime the
// chart's dashboard and alert rules query (a histogram's _bucket, _sum and
// _count by its family name).
func chartMetricNames() []string {
	GinkgoHelper()
	var text strings.Builder
	for _, file := range []string{"dashboard.json", "alerts.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "charts", "copse", "files", file))
		Expect(err).NotTo(HaveOccurred())
		text.Write(data)
	}
	seen := map[string]bool{}
	for _, name := range regexp.MustCompile(`\b(?:controller_runtime|workqueue)_[a-z_]+`).FindAllString(text.String(), -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if strings.HasSuffix(name, "_seconds"+suffix) {
				name = strings.TrimSuffix(name, suffix)
			}
		}
		seen[name] = true
	}
	Expect(seen).To(HaveKey("controller_runtime_reconcile_errors_total"))
	return slices.Sorted(maps.Keys(seen))
}
