package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// setSuspend suspends or resumes a TrainJob.
func setSuspend(ctx context.Context, tj *trainerv1alpha1.TrainJob, suspend bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		got.Spec.Suspend = ptr.To(suspend)
		g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// waitSuspended waits until the TrainJob's Suspended condition has the given
// status and returns it.
func waitSuspended(ctx context.Context, tj *trainerv1alpha1.TrainJob, status metav1.ConditionStatus) *metav1.Condition {
	GinkgoHelper()
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		c = condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobSuspended)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status))
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return c
}

// expectNotFailedUntil checks, until the given time, that the TrainJob has
// not failed.
func expectNotFailedUntil(ctx context.Context, tj *trainerv1alpha1.TrainJob, until time.Time) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobFailed)).To(BeNil())
	}).WithContext(ctx).WithTimeout(time.Until(until)).WithPolling(poll).Should(Succeed())
}

var _ = Describe("A TrainJob's lifecycle", Label("trainjob"), func() {
	It("mirrors its JobSet's replicated jobs into jobsStatus while it runs and at the end", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "jobs-status")
		tj := sdkTrainJob(ns, "train", "torch-distributed", 2)
		withPods(tj, "node", simulate(5*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("reporting one active, ready Job while its pods run")
		runningPods(ctx, tj, "node", 2)
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			g.Expect(got.Status.JobsStatus).To(ConsistOf(And(HaveField("Name", "node"),
				HaveField("Active", HaveValue(BeEquivalentTo(1))), HaveField("Ready", HaveValue(BeEquivalentTo(1))),
				HaveField("Succeeded", HaveValue(BeEquivalentTo(0))), HaveField("Failed", HaveValue(BeEquivalentTo(0))))))
			g.Expect(condition(got, trainerv1alpha1.TrainJobComplete)).To(BeNil())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("reporting the Job succeeded once it completed, as the JobSet does")
		waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			g.Expect(got.Status.JobsStatus).To(ConsistOf(And(HaveField("Name", "node"),
				HaveField("Active", HaveValue(BeEquivalentTo(0))), HaveField("Ready", HaveValue(BeEquivalentTo(0))),
				HaveField("Succeeded", HaveValue(BeEquivalentTo(1))), HaveField("Failed", HaveValue(BeEquivalentTo(0))))))
			js, err := jobSetOf(ctx, tj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js.Status.ReplicatedJobsStatus).To(HaveLen(1))
			mirrored := js.Status.ReplicatedJobsStatus[0]
			g.Expect(got.Status.JobsStatus[0]).To(Equal(trainerv1alpha1.JobStatus{Name: mirrored.Name,
				Ready: &mirrored.Ready, Succeeded: &mirrored.Succeeded, Failed: &mirrored.Failed,
				Active: &mirrored.Active, Suspended: &mirrored.Suspended}))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	})

	It("starts suspended with a suspended JobSet and no pods, and runs once resumed", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "suspend")
		tj := sdkTrainJob(ns, "train", "torch-distributed", 2)
		tj.Spec.Suspend = ptr.To(true)
		withPods(tj, "node", simulate(2*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("creating its JobSet suspended, with Suspended=True")
		js := waitJobSet(ctx, tj)
		Expect(js.Spec.Suspend).To(HaveValue(BeTrue()))
		suspended := waitSuspended(ctx, tj, metav1.ConditionTrue)
		Expect(suspended.Reason).To(Equal(trainerv1alpha1.TrainJobSuspendedReason))
		Consistently(func(g Gomega) {
			g.Expect(podsOf(ctx, tj)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(poll).Should(Succeed())

		By("resuming: pods, Suspended=False with reason Resumed, and Complete")
		setSuspend(ctx, tj, false)
		resumed := waitSuspended(ctx, tj, metav1.ConditionFalse)
		Expect(resumed.Reason).To(Equal(trainerv1alpha1.TrainJobResumedReason))
		Eventually(func(g Gomega) {
			js, err := jobSetOf(ctx, tj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js.Spec.Suspend).To(HaveValue(BeFalse()))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobSuspended).Status).To(Equal(metav1.ConditionFalse))
		Expect(podsOf(ctx, tj)).To(HaveLen(2))
	})

	It("leaves a TrainJob managed by MultiKueue alone: no JobSet, no status", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "multikueue")
		local := sdkTrainJob(ns, "local", "torch-distributed", 1)
		remote := sdkTrainJob(ns, "remote", "torch-distributed", 1)
		remote.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
		Expect(env.Client.Create(ctx, remote)).To(Succeed())
		Expect(env.Client.Create(ctx, local)).To(Succeed())

		By("building the TrainJob copse manages, created after the other")
		waitJobSet(ctx, local)

		By("writing nothing for the one MultiKueue runs elsewhere")
		Consistently(func(g Gomega) {
			got := getTrainJob(ctx, remote)
			g.Expect(got.Status).To(Equal(trainerv1alpha1.TrainJobStatus{}))
			_, err := jobSetOf(ctx, remote)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "JobSet of a MultiKueue TrainJob: %v", err)
			snapshot := &corev1.ConfigMap{}
			err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: remote.Name + trainjob.RuntimeSnapshotSuffix}, snapshot)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "runtime snapshot of a MultiKueue TrainJob: %v", err)
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(poll).Should(Succeed())
	})
})

var _ = Describe("activeDeadlineSeconds", Label("trainjob"), func() {
	It("does not fail a TrainJob before its deadline, nor once it has completed", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "deadline-ok")
		tj := sdkTrainJob(ns, "train", "torch-distributed", 1)
		tj.Spec.ActiveDeadlineSeconds = 8
		withPods(tj, "node", simulate(2*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil())
		By("staying Complete after the deadline passed")
		expectNotFailedUntil(ctx, tj, got.CreationTimestamp.Add(10*time.Second))
	})

	It("does not run while the TrainJob is suspended, and counts from the resume", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "deadline-suspended")
		tj := sdkTrainJob(ns, "train", "torch-distributed", 1)
		tj.Spec.ActiveDeadlineSeconds = 3
		tj.Spec.Suspend = ptr.To(true)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		waitSuspended(ctx, tj, metav1.ConditionTrue)

		By("not failing it while suspended, long after the deadline")
		created := getTrainJob(ctx, tj).CreationTimestamp.Time
		expectNotFailedUntil(ctx, tj, created.Add(5*time.Second))

		By("failing it a full deadline after the resume")
		setSuspend(ctx, tj, false)
		resumed := waitSuspended(ctx, tj, metav1.ConditionFalse)
		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobDeadlineExceededReason))
		Expect(failed.LastTransitionTime.Time).To(BeTemporally(">=", resumed.LastTransitionTime.Add(3*time.Second)))
	})
})
