package trainjob_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/trainjob"
)

// nameOf is a TrainJob name of exactly length characters.
func nameOf(length int) string {
	return "t" + strings.Repeat("x", length-1)
}

// expectNoBackendObject checks for a while that the TrainJob has no
// backend object of obj's kind.
func expectNoBackendObject(ctx context.Context, tj *trainerv1alpha1.TrainJob, obj client.Object) {
	GinkgoHelper()
	Consistently(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)
	}).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound),
		"%T of TrainJob %s exists", obj, tj.Name)
}

// expectWarning waits for a Warning event of reason in the namespace whose
// note says every fragment.
func expectWarning(ctx context.Context, namespace, reason string, fragments ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		events := env.EventsWithReason(ctx, g, namespace, reason)
		g.Expect(events).NotTo(BeEmpty(), "no %s event", reason)
		for _, ev := range events {
			g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
			for _, fragment := range fragments {
				g.Expect(ev.Note).To(ContainSubstring(fragment))
			}
		}
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

var _ = Describe("A TrainJob whose backend object cannot be made", Label("trainjob"), func() {
	// torch-distributed has one replicated job, node: the PodCliqueSet
	// webhook keeps room for <name>-0-node-99999, JobSet's for
	// <name>-node-0-<last pod index>-xxxxx.
	DescribeTable("is refused when its name is too long for the runtime's backend, naming metadata.name, the backend and the limit; a name of the limit runs",
		func(ctx context.Context, kind trainerv1alpha1.RuntimeBackend, limit int, backendObject func() client.Object) {
			ns := env.NewNamespace(ctx, "name-limit")
			createRuntime(ctx, withBackend(runtimeCopy(ns, "torch-distributed"), kind))

			for _, length := range []int{56, limit + 1} {
				tj := onTrainingRuntime(sdkTrainJob(ns, nameOf(length), "torch-distributed", 2))
				framework.ExpectAdmissionInvalid(env.Client.Create(ctx, tj), trainJobWebhook, "metadata.name",
					"must be no more than "+strconv.Itoa(limit)+" characters", "whose backend is "+string(kind))
			}

			tj := onTrainingRuntime(sdkTrainJob(ns, nameOf(limit), "torch-distributed", 2))
			Expect(env.Client.Create(ctx, tj)).To(Succeed())
			// The backend's own admission takes the object built from it.
			waitControlled(ctx, tj, backendObject())
			Consistently(func(g Gomega) {
				got := getTrainJob(ctx, tj)
				g.Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil())
				g.Expect(condition(got, trainerv1alpha1.TrainJobBackendRefused)).To(BeNil())
			}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(poll).Should(Succeed())
		},
		Entry("PodCliqueSet backend", trainerv1alpha1.RuntimeBackendPodCliqueSet, 63-len("-0-node-99999"),
			func() client.Object { return &copsev1alpha1.PodCliqueSet{} }),
		Entry("JobSet backend (JobSet's pod names)", trainerv1alpha1.RuntimeBackendJobSet, 63-len("-node-0-1-abcde"),
			func() client.Object { return jobSetBackend.object(&trainerv1alpha1.TrainJob{}) }),
	)

	It("fails with BackendRejected, quoting the API server, when the PodCliqueSet webhook refuses its PodCliqueSet", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "backend-rejected")
		createRuntime(ctx, withBackend(runtimeCopy(ns, "torch-distributed"), trainerv1alpha1.RuntimeBackendPodCliqueSet))
		// More pods in one replica than the operator's limits allow
		// (maxPodsPerReplica, 32768 by default).
		tj := onTrainingRuntime(sdkTrainJob(ns, "huge", "torch-distributed", 40000))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobBackendRejectedReason))
		Expect(failed.Message).To(And(ContainSubstring("the API server refused to create PodCliqueSet huge"),
			ContainSubstring("denied the request"), ContainSubstring("maxPodsPerReplica")))
		expectWarning(ctx, ns, trainerv1alpha1.TrainJobBackendRejectedReason, "the API server refused to create PodCliqueSet huge")
		expectNoBackendObject(ctx, tj, &copsev1alpha1.PodCliqueSet{})
	})

	It("says so with BackendRefused while a ResourceQuota refuses its PodCliqueSet, and runs once it admits it", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "backend-quota")
		createRuntime(ctx, withBackend(runtimeCopy(ns, "torch-distributed"), trainerv1alpha1.RuntimeBackendPodCliqueSet))
		// The local control plane's quota controller sets this quota's hard
		// limit but never counts the PodCliqueSets, so the API server
		// refuses them with "status unknown for quota" for as long as the
		// quota exists; no room ("exceeded quota") is classified the same
		// way (TestClassifyRefusal).
		const counted = corev1.ResourceName("count/podcliquesets.grove.io")
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-podcliquesets"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{counted: resource.MustParse("0")}}}
		Expect(env.Client.Create(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			g.Expect(quota.Status.Hard).To(HaveKey(counted), "the quota controller has not picked the quota up yet")
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		tj := onTrainingRuntime(sdkTrainJob(ns, "train", "torch-distributed", 1))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("BackendRefused=True, reason ResourceQuota, quoting the API server, with a Warning event; not failed")
		Eventually(func(g Gomega) {
			c := condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobBackendRefused)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("ResourceQuota"), "message: %s", c.Message)
			g.Expect(c.Message).To(And(ContainSubstring("the API server refused to create PodCliqueSet train"),
				ContainSubstring("quota: no-podcliquesets")))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		expectWarning(ctx, ns, "ResourceQuota", "quota: no-podcliquesets")
		Expect(condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobFailed)).To(BeNil())
		expectNoBackendObject(ctx, tj, &copsev1alpha1.PodCliqueSet{})

		By("the quota gone: the PodCliqueSet is created at the next retry and the condition goes")
		Expect(env.Client.Delete(ctx, quota)).To(Succeed())
		waitPodCliqueSet(ctx, tj)
		Eventually(func(g Gomega) {
			g.Expect(condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobBackendRefused)).To(BeNil())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		podCliqueSetBackend.runningPods(ctx, ns, trainjob.NodeName, 1)
	})

	DescribeTable("still carries a suspension to its backend object when the build cannot be made (an unreadable runtime snapshot)",
		func(ctx context.Context, b backend) {
			ns := env.NewNamespace(ctx, "suspend-unbuilt")
			b.torchRuntime(ctx, ns, nil)
			tj := torchTrainJob(ns, 2)
			Expect(env.Client.Create(ctx, tj)).To(Succeed())
			b.runningPods(ctx, ns, trainjob.NodeName, 2)

			By("making the runtime snapshot unreadable, then suspending the TrainJob")
			snapshot := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name + trainjob.RuntimeSnapshotSuffix}}
			Eventually(func(g Gomega) {
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(snapshot), snapshot)).To(Succeed())
				snapshot.Data[trainjob.RuntimeSnapshotKey] = "spec: [this is not a runtime"
				g.Expect(env.Client.Update(ctx, snapshot)).To(Succeed())
			}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
			setSuspend(ctx, tj, true)

			By("its pods go, the backend object suspended with only spec.suspend set, and a Warning event says why")
			b.expectNoPods(ctx, ns)
			expectWarning(ctx, ns, "SuspendedWithoutBuild", "only spec.suspend set", "runtime snapshot")
		},
		Entry("JobSet backend", jobSetBackend),
		Entry("PodCliqueSet backend", podCliqueSetBackend),
	)
})

var _ = Describe("A TrainJob's status times on the PodCliqueSet backend", Label("trainjob"), func() {
	It("are the PodCliqueSet's: Complete carries when its pods finished, not when copse noticed", func(ctx context.Context) {
		DeferCleanup(func(ctx context.Context) {
			// A failed spec must not leave the next one without an operator.
			if ok, _ := env.Operator.Running(); !ok {
				Expect(env.Operator.Restart(ctx)).To(Succeed())
			}
		})
		ns := env.NewNamespace(ctx, "backend-times")
		createRuntime(ctx, withBackend(runtimeCopy(ns, "torch-distributed"), trainerv1alpha1.RuntimeBackendPodCliqueSet))
		tj := onTrainingRuntime(sdkTrainJob(ns, "train", "torch-distributed", 2))
		withPods(tj, trainjob.NodeName, simulate(6*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		podCliqueSetBackend.runningPods(ctx, ns, trainjob.NodeName, 2)

		By("killing the operator while the pods run; they finish without it")
		Expect(env.Operator.Kill()).To(Succeed())
		killed := time.Now()
		var finished time.Time
		Eventually(func(g Gomega) {
			pods := podCliqueSetBackend.pods(ctx, g, ns, trainjob.NodeName)
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
				for _, cs := range p.Status.ContainerStatuses {
					if t := cs.State.Terminated; t != nil && t.FinishedAt.After(finished) {
						finished = t.FinishedAt.Time
					}
				}
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(finished).To(BeTemporally(">=", killed.Truncate(time.Second)), "the pods finished before the operator was killed")
		time.Sleep(4 * time.Second)
		restarted := time.Now()
		Expect(env.Operator.Restart(ctx)).To(Succeed())

		By("Complete's transition time is the last pod's finish, seconds before the operator was back")
		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		complete := condition(got, trainerv1alpha1.TrainJobComplete)
		Expect(complete.LastTransitionTime.Time).To(BeTemporally("==", finished.Truncate(time.Second)),
			"Complete at %v, the pods finished at %v, the operator came back at %v", complete.LastTransitionTime, finished, restarted)
	})
})
