package training_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

// holdFinalizer keeps an object in the API server after its deletion, so a
// restart can be caught in the middle.
const holdFinalizer = "e2e.copse.dev/hold"

func setHold(ctx context.Context, key client.ObjectKey, hold bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pclq := &copsev1alpha1.PodClique{}
		g.Expect(env.Client.Get(ctx, key, pclq)).To(Succeed())
		patch := client.MergeFrom(pclq.DeepCopy())
		if hold {
			controllerutil.AddFinalizer(pclq, holdFinalizer)
		} else {
			controllerutil.RemoveFinalizer(pclq, holdFinalizer)
		}
		g.Expect(env.Client.Patch(ctx, pclq, patch)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

var _ = Describe("Operator crash safety", Label("training"), Ordered, func() {
	AfterEach(restartOperatorIfKilled)

	It("neither loses nor repeats a restart when killed while the restart is in progress", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "crash-restart")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 2, "10s", 2))).To(Succeed())
		pods := runningPods(ctx, ns, "job", "0", "0", 2)
		startTime := waitStartTime(ctx, ns, "job")

		cliqueKey := client.ObjectKey{Namespace: ns, Name: "job-0-worker"}
		setHold(ctx, cliqueKey, true)
		env.MakePodExit(ctx, &pods[0], "1")

		By("waiting until the restart is recorded and the old PodClique is being deleted")
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
			g.Expect(pcs.Status.ReplicaRecreations[0].CompletedAt).To(BeNil())
			old := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, cliqueKey, old)).To(Succeed())
			g.Expect(old.DeletionTimestamp.IsZero()).To(BeFalse())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("killing the operator mid-restart, letting the deletion finish while it is down")
		Expect(env.Operator.Kill()).To(Succeed())
		setHold(ctx, cliqueKey, false)
		time.Sleep(2 * time.Second)
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("finishing the same restart, counted once, and then succeeding")
		runningPods(ctx, ns, "job", "0", "1", 2)
		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(Equal(int32(1)))
			g.Expect(pcs.Status.StartTime.Time).To(BeTemporally("==", startTime.Time))
			g.Expect(pcs.Status.ReplicaRecreations).To(HaveLen(1))
			g.Expect(pcs.Status.ReplicaRecreations[0].Attempt).To(Equal(int32(1)))
			g.Expect(pcs.Status.ReplicaRecreations[0].CompletedAt).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		expectNoOrphans(ctx, ns, "job")
	})

	It("reaches Succeeded with the right counts when killed while pods exit 0", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "crash-success")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "job", 1, 3, "6s", 1))).To(Succeed())
		runningPods(ctx, ns, "job", "0", "0", 3)
		startTime := waitStartTime(ctx, ns, "job")

		By("killing the operator before the pods finish, and keeping it down until all exited 0")
		Expect(env.Operator.Kill()).To(Succeed())
		Eventually(func(g Gomega) {
			pods := env.Pods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning),
			"nothing can have observed the end while the operator was down")
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		Eventually(func(g Gomega) {
			pcs := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))
			g.Expect(pcs.Status.RestartCount).To(BeZero())
			g.Expect(pcs.Status.StartTime.Time).To(BeTemporally("==", startTime.Time))
			g.Expect(failedCondition(pcs)).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.Pods(ctx, g, ns, "job")).To(HaveLen(3), "no pod may be recreated after success")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		expectNoOrphans(ctx, ns, "job")
	})
})

var _ = Describe("Inference next to Training", Label("training"), func() {
	It("keeps Grove behaviour: 4h terminationDelay, restartPolicy Always, failed pods replaced", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "mixed")
		Expect(env.Client.Create(ctx, framework.NewTrainingWorkers(ns, "train", 1, 2, "", 1))).To(Succeed())
		serverSpec := framework.PodSpec(0)
		sidecarSpec := framework.PodSpec(0)
		sidecarSpec.RestartPolicy = corev1.RestartPolicyNever
		serve := framework.NewPodCliqueSet(ns, "serve", 1,
			framework.CliqueTemplate("server", 1, serverSpec),
			framework.CliqueTemplate("sidecar", 1, sidecarSpec))
		Expect(env.Client.Create(ctx, serve)).To(Succeed())

		got := env.GetPodCliqueSet(ctx, Default, ns, "serve")
		Expect(got.Spec.WorkloadType).To(Equal(copsev1alpha1.WorkloadTypeInference))
		Expect(got.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 4 * time.Hour}))
		train := env.GetPodCliqueSet(ctx, Default, ns, "train")
		Expect(train.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 0}))
		Expect(train.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))

		var sidecar corev1.Pod
		Eventually(func(g Gomega) {
			pods := env.LivePods(ctx, g, ns, "serve")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(framework.IsReady(&p)).To(BeTrue())
				if p.Spec.RestartPolicy == corev1.RestartPolicyNever {
					sidecar = p
				} else {
					g.Expect(p.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyAlways))
				}
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		env.MakePodExit(ctx, &sidecar, "1")
		Eventually(func(g Gomega) {
			pods := env.LivePods(ctx, g, ns, "serve")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.UID).NotTo(Equal(sidecar.UID), "the failed pod was not replaced")
				g.Expect(framework.IsReady(&p)).To(BeTrue())
			}
			pcs := env.GetPodCliqueSet(ctx, g, ns, "serve")
			g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
			g.Expect(failedCondition(pcs)).To(BeNil())
			g.Expect(pcs.Status.RestartCount).To(BeZero())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})

// waitStartTime waits until the workload runs and returns its startTime.
func waitStartTime(ctx context.Context, namespace, name string) *metav1.Time {
	GinkgoHelper()
	var startTime *metav1.Time
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
		g.Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		g.Expect(pcs.Status.StartTime).NotTo(BeNil())
		startTime = pcs.Status.StartTime
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	return startTime
}
