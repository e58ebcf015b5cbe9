package webhook_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/copse-dev/copse/internal/webhook"
)

// These specs exercise the framework's operator life cycle, which suites
// with controllers rely on: webhooks must be served again after a restart,
// and a killed operator must get its leadership back.
var _ = Describe("The e2e operator", Ordered, Label("webhook"), func() {
	var namespace string

	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "lifecycle")
	})

	// expectDefaulting creates a PodCliqueSet and checks that the
	// defaulting webhook handled it.
	expectDefaulting := func(ctx context.Context, name string) {
		GinkgoHelper()
		pcs := newPodCliqueSet(namespace, name, "")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		Expect(pcs.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 4 * time.Hour}))
	}

	It("leads, and reports webhook requests in its metrics", func(ctx context.Context) {
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
		expectDefaulting(ctx, "metrics")

		resp, err := http.Get(env.Operator.MetricsURL())
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(ContainSubstring(`controller_runtime_webhook_requests_total{code="200",webhook="` + webhook.MutatePodCliqueSetPath + `"}`))
	}, SpecTimeout(time.Minute))

	It("serves webhooks again after a clean restart", func(ctx context.Context) {
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		expectDefaulting(ctx, "after-restart")
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("takes the lease over after being killed", func(ctx context.Context) {
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.CheckHealthy()).To(Succeed(), "a kill on purpose is not a crash")
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		expectDefaulting(ctx, "after-kill")
		// The killed operator did not release the Lease: it must expire first.
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("logs every run to one file", func() {
		log, err := os.ReadFile(env.Operator.LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(log), "\n===== ")+1).To(BeNumerically(">=", 3), "a start, a restart and a restart after kill")
	})
})
