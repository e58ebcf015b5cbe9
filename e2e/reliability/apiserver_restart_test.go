package reliability_test

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// The operator, kwok and the control plane's controllers are clients of the
// API server: when it restarts they must reconnect on their own. The
// operator holds a leader-election Lease it must renew within renewDeadline
// (10s by default, 20s in this suite): an outage shorter than that it rides
// out; after a longer one it cannot know whether another replica leads, so
// it exits (a Deployment restarts it) and a restarted operator resumes.
var _ = Describe("API server restart", Label("reliability"), Ordered, func() {
	var (
		namespace     string
		renewDeadline time.Duration
	)

	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "apiserver-restart")
		renewDeadline = env.Operator.Configuration().LeaderElection.RenewDeadline.Duration
		DeferCleanup(func(ctx context.Context) {
			if running, _ := env.Operator.Running(); !running {
				Expect(env.Operator.Restart(ctx)).To(Succeed())
			}
		})
	})

	// expectServing checks that the operator admits and reconciles a new
	// PodCliqueSet and that the pods of running are the same as before.
	expectServing := func(ctx context.Context, name string, running []types.UID) {
		GinkgoHelper()
		pcs := servingPCS(namespace, name, 1)
		Eventually(func() error { return env.Client.Create(ctx, pcs) }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the webhooks are not called again")
		readyPods(ctx, namespace, pcs.Name, 2)
		Expect(uids(readyPods(ctx, namespace, "steady", 3))).To(ConsistOf(running), "pods of the running workload were replaced")
	}

	var steadyUIDs []types.UID

	It("is ridden out by the operator when shorter than its lease's renewDeadline", func(ctx context.Context) {
		Expect(env.Client.Create(ctx, servingPCS(namespace, "steady", 2))).To(Succeed())
		steadyUIDs = uids(readyPods(ctx, namespace, "steady", 3))

		began := time.Now()
		Expect(env.Cluster.RestartAPIServer(ctx, 0)).To(Succeed())
		outage := time.Since(began)
		GinkgoWriter.Printf("kube-apiserver was down for %s\n", outage)
		Expect(outage).To(BeNumerically("<", renewDeadline), "the restart took too long to test riding it out")
		Expect(env.CheckHealthy()).To(Succeed(), "the operator or a component exited during the restart")

		expectServing(ctx, "after-short", steadyUIDs)
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
		Consistently(env.Operator.CheckHealthy).WithTimeout(renewDeadline).WithPolling(time.Second).Should(Succeed(),
			"the operator exited after the API server came back")
	}, SpecTimeout(5*time.Minute))

	It("makes the operator exit when longer, and a restarted operator resumes without disturbing workloads", func(ctx context.Context) {
		Expect(env.Cluster.RestartAPIServer(ctx, renewDeadline+2*time.Second)).To(Succeed())
		Eventually(func() bool {
			running, _ := env.Operator.Running()
			return running
		}).WithContext(ctx).WithTimeout(renewDeadline).Should(BeFalse(), "the operator kept running without its Lease")
		_, exit := env.Operator.Running()
		Expect(exit).To(HaveOccurred(), "the operator exited cleanly: it must report the lost Lease")
		log, err := os.ReadFile(env.Operator.LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("leader election lost"))

		By("restarting it, as a Deployment would")
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
		expectServing(ctx, "after-long", steadyUIDs)
	}, SpecTimeout(5*time.Minute))
})
