package reliability_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The operator, kwok and the control plane's controllers are clients of the
// API server: when it restarts they must reconnect on their own, and the
// operator must neither exit nor disturb the workloads it runs.
var _ = Describe("API server restart", Label("reliability"), func() {
	It("is ridden out by the operator: it keeps running, serves its webhooks and reconciles new workloads", func(ctx context.Context) {
		namespace := newNamespace(ctx, "apiserver-restart")
		before := servingPCS(namespace, "before", 2)
		Expect(env.Client.Create(ctx, before)).To(Succeed())
		running := readyPods(ctx, namespace, before.Name, 3)

		began := time.Now()
		Expect(env.Cluster.RestartAPIServer(ctx)).To(Succeed())
		GinkgoWriter.Printf("kube-apiserver restarted in %s\n", time.Since(began))
		Expect(env.CheckHealthy()).To(Succeed(), "the operator or a component exited during the restart")

		By("admitting and reconciling a new PodCliqueSet")
		after := servingPCS(namespace, "after", 1)
		Eventually(func() error { return env.Client.Create(ctx, after) }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the webhooks are not called again")
		readyPods(ctx, namespace, after.Name, 2)

		By("keeping the running workload's pods")
		Expect(uids(readyPods(ctx, namespace, before.Name, 3))).To(ConsistOf(uids(running)))
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
		Expect(env.CheckHealthy()).To(Succeed())
	}, SpecTimeout(5*time.Minute))
})
