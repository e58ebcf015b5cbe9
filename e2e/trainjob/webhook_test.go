package trainjob_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/trainjob"
)

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// warningClient is a client whose requests' warnings are collected.
func warningClient() (client.Client, *warnings) {
	GinkgoHelper()
	seen := &warnings{}
	cfg := env.Cluster.RESTConfig()
	cfg.WarningHandler = seen
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c, seen
}

var _ = Describe("The TrainJob webhooks", Label("trainjob"), func() {
	It("refuse a TrainJob whose runtime does not exist, naming spec.runtimeRef", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "webhook-runtime")
		tj := sdkTrainJob(ns, "train", "no-such-runtime", 1)
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, tj), trainJobWebhook,
			"spec.runtimeRef", "no-such-runtime", "the runtime must exist before the TrainJob")
	})

	It("refuse an env variable the torch policy owns, naming spec.trainer.env", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "webhook-env")
		tj := sdkTrainJob(ns, "train", "torch-distributed", 2)
		tj.Spec.Trainer.Env = []corev1.EnvVar{{Name: trainjob.TorchEnvNumNodes, Value: "4"}}
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, tj), trainJobWebhook,
			"spec.trainer.env", trainjob.TorchEnvNumNodes, "must not have reserved envs")
	})

	It("accept a runtime with a TTL under a minute, with a warning", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "webhook-ttl")
		c, seen := warningClient()

		Expect(c.Create(ctx, ttlRuntime(ns, ptr.To[int32](30)))).To(Succeed())
		Expect(seen.take()).To(ConsistOf(ContainSubstring(
			"spec.ttlSecondsAfterFinished is 30s: finished TrainJobs of this runtime are deleted, with their JobSet and logs, less than a minute after they end")))

		long := ttlRuntime(ns, ptr.To[int32](120))
		long.Name = "plain-long-ttl"
		Expect(c.Create(ctx, long)).To(Succeed())
		Expect(seen.take()).To(BeEmpty(), "a TTL of two minutes is not short")
	})
})
