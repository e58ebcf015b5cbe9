package reliability_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/webhook"
)

// With the operator down, writes that need its webhooks fail with an error
// that says the webhook could not be reached, within the webhook timeout
// (failurePolicy Fail, webhook.TimeoutSeconds), while the running workload
// is left alone; once the operator is back everything works again
// (issue 10, item 5; docs/webhooks.md "When the operator is down").
var _ = Describe("Operator down", Label("reliability"), Ordered, func() {
	const (
		mutatePodCliqueSet = "default.podcliquesets.grove.io"
		// margin is what the API server and the client may add to the
		// webhook timeout on a loaded machine.
		margin = 3 * time.Second
	)
	timeout := time.Duration(webhook.TimeoutSeconds) * time.Second

	var (
		namespace string
		steady    *copsev1alpha1.PodCliqueSet
		// The steady workload's objects as they were when the operator
		// stopped.
		steadyPods  map[string]string
		steadyUIDs  []types.UID
		steadyState map[string]string
	)

	// objectVersions maps each grove.io object of the steady workload to its
	// UID and resourceVersion.
	objectVersions := func(ctx context.Context, g Gomega) map[string]string {
		out := map[string]string{}
		pcs := env.GetPodCliqueSet(ctx, g, namespace, steady.Name)
		out["PodCliqueSet/"+pcs.Name] = string(pcs.UID) + "@" + pcs.ResourceVersion
		var cliques copsev1alpha1.PodCliqueList
		g.Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: steady.Name})).To(Succeed())
		for _, c := range cliques.Items {
			out["PodClique/"+c.Name] = string(c.UID) + "@" + c.ResourceVersion
		}
		return out
	}

	// timedCreate creates pcs and returns how long it took and the error.
	timedCreate := func(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (time.Duration, error) {
		began := time.Now()
		err := env.Client.Create(ctx, pcs)
		return time.Since(began), err
	}

	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "operator-down")
		steady = servingPCS(namespace, "steady", 2)
		Expect(env.Client.Create(ctx, steady)).To(Succeed())
		readyPods(ctx, namespace, steady.Name, 3)
		// Whatever a spec leaves behind, the suite's other specs need the
		// operator.
		DeferCleanup(func(ctx context.Context) {
			if running, _ := env.Operator.Running(); !running {
				Expect(env.Operator.Restart(ctx)).To(Succeed())
			}
		})
	})

	It("refuses a new PodCliqueSet at once, saying the webhook could not be reached", func(ctx context.Context) {
		// Let the status settle, so that nothing the operator was about to
		// write is mistaken below for a change made while it was down.
		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, namespace, steady.Name).Status.AvailableReplicas).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.Operator.Stop()).To(Succeed())
		pods := readyPods(ctx, namespace, steady.Name, 3)
		steadyPods, steadyUIDs = podIdentities(pods), uids(pods)
		steadyState = objectVersions(ctx, Default)

		took, err := timedCreate(ctx, servingPCS(namespace, "while-stopped", 1))
		GinkgoWriter.Printf("create with the operator stopped: %s: %v\n", took, err)
		Expect(err).To(HaveOccurred(), "a PodCliqueSet was admitted without the operator's webhooks")
		Expect(apierrors.IsInternalError(err)).To(BeTrue(), "want an InternalError (500), got %v", err)
		Expect(err.Error()).To(ContainSubstring(`failed calling webhook "` + mutatePodCliqueSet + `"`))
		Expect(err.Error()).To(ContainSubstring("connection refused"))
		Expect(took).To(BeNumerically("<", timeout+margin), "the refusal must come within the webhook timeout")
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "while-stopped"}, &copsev1alpha1.PodCliqueSet{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the refused PodCliqueSet was stored: %v", err)
	})

	It("refuses it within the webhook timeout when the operator hangs", func(ctx context.Context) {
		// A listener on the operator's webhook port that accepts
		// connections and never answers: a hung operator, or a network
		// that drops the replies.
		cfg := env.Operator.Configuration().WebhookServer
		listener, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
		Expect(err).NotTo(HaveOccurred())
		hung := holdConnections(listener)
		DeferCleanup(hung.close)

		took, err := timedCreate(ctx, servingPCS(namespace, "while-hung", 1))
		GinkgoWriter.Printf("create with the operator hung: %s: %v\n", took, err)
		Expect(err).To(HaveOccurred(), "a PodCliqueSet was admitted without the operator's webhooks")
		Expect(apierrors.IsInternalError(err) || apierrors.IsTimeout(err)).To(BeTrue(), "want an InternalError or a Timeout, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`failed calling webhook "` + mutatePodCliqueSet + `"`))
		Expect(hung.accepted()).To(BeNumerically(">", 0), "the API server never called the webhook port")
		Expect(took).To(BeNumerically(">=", timeout-500*time.Millisecond), "refused before the webhook timeout: the hang was not simulated")
		Expect(took).To(BeNumerically("<", timeout+margin), "the refusal must come within the webhook timeout")
	})

	It("leaves the running workload alone, and lets metadata changes through", func(ctx context.Context) {
		Consistently(func(g Gomega) {
			pods := env.LivePods(ctx, g, namespace, steady.Name)
			for i := range pods {
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s", pods[i].Name)
			}
			g.Expect(podIdentities(pods)).To(Equal(steadyPods), "pods changed")
			g.Expect(objectVersions(ctx, g)).To(Equal(steadyState), "the PodCliqueSet or its PodCliques changed")
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("a label is not a spec change, so no webhook is called")
		pcs := env.GetPodCliqueSet(ctx, Default, namespace, steady.Name)
		patch := client.MergeFrom(pcs.DeepCopy())
		pcs.Labels = map[string]string{"team": "serving"}
		Expect(env.Client.Patch(ctx, pcs, patch)).To(Succeed())

		By("a spec change waits for the operator")
		patch = client.MergeFrom(pcs.DeepCopy())
		pcs.Spec.Template.Cliques[1].Spec.Replicas = 3
		err := env.Client.Patch(ctx, pcs, patch)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("failed calling webhook"))
	})

	It("works again once the operator is back, without disturbing the workload", func(ctx context.Context) {
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		Expect(env.Operator.WaitForLeadership(ctx)).To(Succeed())

		after := servingPCS(namespace, "after-restart", 1)
		Expect(env.Client.Create(ctx, after)).To(Succeed())
		readyPods(ctx, namespace, after.Name, 2)
		pods := readyPods(ctx, namespace, steady.Name, 3)
		Expect(uids(pods)).To(ConsistOf(steadyUIDs), "the restarted operator replaced pods of the running workload")
	})
})

// heldConnections accepts connections on a listener and never answers them.
type heldConnections struct {
	listener net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	done     chan struct{}
}

func holdConnections(listener net.Listener) *heldConnections {
	h := &heldConnections{listener: listener, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			conn, err := listener.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			h.mu.Lock()
			h.conns = append(h.conns, conn)
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *heldConnections) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

func (h *heldConnections) close() {
	_ = h.listener.Close()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.Close()
	}
}
