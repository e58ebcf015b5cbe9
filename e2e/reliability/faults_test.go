package reliability_test

import (
	"context"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

// Faults of the control plane in the middle of a Training restart: each
// workload must end in the state its history implies, with the same
// invariants the chaos harness checks.
var _ = Describe("Control-plane faults during Training", Label("reliability"), func() {
	// flakyJob is a Training job whose first run fails and whose second
	// run succeeds: it must end Succeeded with exactly one restart.
	flakyJob := func(ns string) *copsev1alpha1.PodCliqueSet {
		pcs := framework.NewTrainingWorkers(ns, "job", 1, 3, "", 0)
		pcs.Spec.TrainingSpec.MaxRestarts = ptr.To[int32](2)
		pcs.Spec.Template.Cliques[0].Annotations = map[string]string{
			cluster.AnnotationRunDuration:        "4s",
			cluster.AnnotationExitCodesByAttempt: "1,0",
		}
		return pcs
	}
	// expectExactEnd checks the end the history implies and the invariants
	// of the recorded history.
	expectExactEnd := func(ctx context.Context, ns string, history *framework.History) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		history.Stop()
		events := history.Events()
		Expect(framework.AttemptOverlaps(events)).To(BeEmpty())
		Expect(framework.EarlyGangs(events)).To(BeEmpty())
		Expect(framework.RerunSuccesses(events)).To(BeEmpty())
	}
	// restartStarted waits until the restart of replica 0 is recorded.
	restartStarted := func(ctx context.Context, ns string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(longWait).WithPolling(50 * time.Millisecond).Should(Succeed())
	}

	It("ends a restart exactly when the API server restarts in its middle", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "restart-apiserver")
		history, err := framework.RecordHistory(ctx, env.Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(history.Stop)
		Expect(env.Client.Create(ctx, flakyJob(ns))).To(Succeed())
		restartStarted(ctx, ns)
		Expect(env.Cluster.RestartAPIServer(ctx, 0)).To(Succeed())
		if running, _ := env.Operator.Running(); !running {
			// A restart longer than the lease's renewDeadline ends the
			// operator; its successor resumes.
			Expect(env.Operator.Restart(ctx)).To(Succeed())
		}
		expectExactEnd(ctx, ns, history)
	})

	It("ends a restart exactly when etcd pauses in its middle", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "pause-etcd")
		history, err := framework.RecordHistory(ctx, env.Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(history.Stop)
		Expect(env.Client.Create(ctx, flakyJob(ns))).To(Succeed())
		restartStarted(ctx, ns)
		pause, err := env.Cluster.PauseEtcd(5 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(pause.Wait()).To(Succeed())
		expectExactEnd(ctx, ns, history)
	})

	It("cleans up a namespace deleted while its Training workloads run, quietly", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "doomed")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "plain", 2, 3, "", 0))).To(Succeed())
		grouped := framework.NewTrainingWorkers(ns, "grouped", 1, 2, "", 0)
		grouped.Spec.Template.Cliques = append(grouped.Spec.Template.Cliques, framework.CliqueTemplate("leader", 1, framework.PodSpec(0)))
		grouped.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2)},
		}
		Expect(env.Client.Create(ctx, grouped)).To(Succeed())
		readyPods(ctx, ns, "plain", 6)
		readyPods(ctx, ns, "grouped", 5)
		errorsBefore := operatorErrors(ns)

		Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s still exists: %v", ns, err)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		errs := operatorErrors(ns)[len(errorsBefore):]
		GinkgoWriter.Printf("operator error lines about %s during its deletion: %d\n%s\n", ns, len(errs), strings.Join(errs, "\n"))
		Expect(errs).To(BeEmpty(), "the deletion of a namespace is not an error of copse's")
	})
})

// operatorErrors are the operator's log lines at error level that name the
// namespace.
func operatorErrors(namespace string) []string {
	GinkgoHelper()
	lines, err := env.Operator.LogLines(namespace)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, l := range lines {
		if strings.Contains(l, `"level":"error"`) || strings.Contains(l, "Server rejected event") {
			out = append(out, l)
		}
	}
	return out
}
