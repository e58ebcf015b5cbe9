package cluster_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/copse-dev/copse/e2e/cluster"
)

// The control-plane faults tests of copse inject: they must really take the
// API server away and really stall etcd, and the cluster must come back
// whole, with every client reconnected.
var _ = Describe("Control-plane faults", Label("cluster"), func() {
	var ns string

	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx)
	})

	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"written": "before"}}
	}

	apiserverPID := func() int {
		for _, c := range testCluster.Components() {
			if c.Name == cluster.KubeAPIServer {
				return c.PID
			}
		}
		Fail("no kube-apiserver component")
		return 0
	}

	It("restarts kube-apiserver: requests fail meanwhile, then everything written before is there and every client reconnected",
		func(ctx context.Context) {
			before, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("before"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			createPod(ctx, ns, simPod("running", corev1.RestartPolicyAlways, nil))
			running := waitForPod(ctx, ns, "running", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			oldPID := apiserverPID()

			restarted := make(chan error, 1)
			go func() {
				defer GinkgoRecover()
				restarted <- testCluster.RestartAPIServer(ctx, 0)
			}()

			By("failing requests while the API server is down")
			var failure error
			Eventually(func() error {
				probeCtx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, failure = client.CoreV1().ConfigMaps(ns).Get(probeCtx, "before", metav1.GetOptions{})
				return failure
			}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(HaveOccurred(),
				"no request failed: the API server was not stopped")
			Expect(failure.Error()).To(ContainSubstring("connection refused"))
			Expect(testCluster.CheckHealthy()).To(Succeed(), "a component being restarted must not be reported")

			By("waiting for the restart")
			var restartErr error
			Eventually(restarted).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Receive(&restartErr))
			Expect(restartErr).NotTo(HaveOccurred())
			Expect(apiserverPID()).NotTo(Equal(oldPID), "the restarted API server is a new process")
			Expect(testCluster.Components()).To(HaveEach(HaveField("Alive", BeTrue())))

			By("finding what was written before, unchanged")
			after, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(after.UID).To(Equal(before.UID))
			Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
			Expect(after.Data).To(Equal(before.Data))
			still := waitForPod(ctx, ns, "running", 10*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			Expect(still.UID).To(Equal(running.UID))

			By("scheduling and running a new pod: the scheduler and kwok reconnected")
			createPod(ctx, ns, simPod("after-restart", corev1.RestartPolicyNever, map[string]string{
				cluster.AnnotationRunDuration: "1s", cluster.AnnotationExitCode: "0",
			}))
			waitForPod(ctx, ns, "after-restart", time.Minute, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })

			By("collecting garbage: the controller-manager reconnected")
			owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("owner"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			dependent := configMap("dependent")
			dependent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
			_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{})).To(Succeed())
			Eventually(func() bool {
				_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(BeTrue())
		}, SpecTimeout(5*time.Minute))

	It("pauses etcd: writes wait or time out meanwhile, and succeed once it resumes", func(ctx context.Context) {
		const pauseFor = 6 * time.Second
		began := time.Now()
		pause, err := testCluster.PauseEtcd(pauseFor)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pause.Resume)

		By("timing out a write with a deadline")
		deadlineCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err = client.CoreV1().ConfigMaps(ns).Create(deadlineCtx, configMap("deadline"), metav1.CreateOptions{})
		Expect(err).To(HaveOccurred(), "a write succeeded while etcd was frozen")
		Expect(time.Since(began)).To(BeNumerically("<", pauseFor), "the write should have given up before etcd resumed")

		By("blocking a write without deadline until etcd resumes")
		_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("blocked"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// The time says the write waited for the resume; Done closes just after
		// SIGCONT, which etcd and the API server may answer before the timer's
		// goroutine gets to close it on a loaded machine.
		Expect(time.Since(began)).To(BeNumerically(">=", pauseFor), "the write returned before etcd was resumed")
		Eventually(pause.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(pause.Wait()).To(Succeed())

		By("writing and reading normally afterwards")
		_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("after"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		got, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "blocked", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Data).To(HaveKeyWithValue("written", "before"))
	}, SpecTimeout(2*time.Minute))
})
