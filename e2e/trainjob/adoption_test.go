package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The move from Kubeflow Trainer to copse that docs/trainjob.md describes,
// with Trainer's own controller manager (v2.3.0, built from its module):
// copse runs alongside Trainer with its TrainJob front-end off, Trainer
// makes the TrainJobs' runtime snapshots and JobSets, Trainer is
// uninstalled and copse's front-end turned on; copse adopts what Trainer
// made and enforces suspend, activeDeadlineSeconds and the TTL on it.
var _ = Describe("Moving from Kubeflow Trainer to copse", Label("trainjob"), Ordered, Serial, func() {
	const (
		// ttl is the runtime's ttlSecondsAfterFinished, a copse field
		// Trainer's API drops from its snapshot.
		ttl = 20
		// deadline is one TrainJob's activeDeadlineSeconds: it runs out
		// after the switch to copse.
		deadline = 120
	)
	var ns string

	BeforeAll(func(ctx context.Context) {
		ns = env.NewNamespace(ctx, "adopt")
		rt := runtimeCopy(ns, "torch-distributed")
		rt.Spec.TTLSecondsAfterFinished = ptr.To[int32](ttl)
		createRuntime(ctx, rt)

		By("leaving Trainer no TrainJob of earlier specs: an installed Trainer reconciles every TrainJob of the cluster")
		Eventually(func(g Gomega) {
			list := &trainerv1alpha1.TrainJobList{}
			g.Expect(env.Client.List(ctx, list)).To(Succeed())
			others := 0
			for i := range list.Items {
				if tj := &list.Items[i]; tj.Namespace != ns {
					others++
					g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, tj))).To(Succeed())
				}
			}
			g.Expect(others).To(BeZero(), "TrainJobs of earlier specs left")
		}).WithContext(ctx).WithTimeout(2 * wait).WithPolling(time.Second).Should(Succeed())

		By("running copse alongside Kubeflow Trainer: copse's TrainJob front-end off (controllers.trainJob.enabled: false)")
		Expect(env.Operator.RestartWith(ctx, func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.Controllers.TrainJob.Enabled = ptr.To(false)
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if !*env.Operator.Configuration().Controllers.TrainJob.Enabled {
				Expect(env.Operator.RestartWith(ctx, enableTrainJob)).To(Succeed())
			}
		})
	})

	It("adopts the snapshots and JobSets Trainer made: nothing recreated, status mirrored, suspend, deadline and TTL enforced", func(ctx context.Context) {
		trainer, err := framework.StartTrainer(ctx, env, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		trainerStopped := false
		DeferCleanup(func(ctx context.Context) {
			if !trainerStopped {
				Expect(trainer.Stop(ctx)).To(Succeed())
			}
		})

		long := onTrainingRuntime(sdkTrainJob(ns, "long", "torch-distributed", 2))
		withPods(long, "node", simulate(10*time.Minute, "0"))
		withGracePeriod(long, "node", 1)
		finishes := onTrainingRuntime(sdkTrainJob(ns, "finishes", "torch-distributed", 1))
		withPods(finishes, "node", simulate(60*time.Second, "0"))
		timesOut := onTrainingRuntime(sdkTrainJob(ns, "times-out", "torch-distributed", 1))
		timesOut.Spec.ActiveDeadlineSeconds = deadline
		withPods(timesOut, "node", simulate(10*time.Minute, "0"))
		withGracePeriod(timesOut, "node", 1)
		all := []*trainerv1alpha1.TrainJob{long, finishes, timesOut}

		By("Kubeflow Trainer runs them: its snapshot (no copse label) and its JobSet (no copse build hash) for each")
		for _, tj := range all {
			Expect(env.Client.Create(ctx, tj)).To(Succeed(), "TrainJob %s", tj.Name)
		}
		snapshotUIDs, jobSetUIDs := map[string]types.UID{}, map[string]types.UID{}
		for _, tj := range all {
			snapshot := waitSnapshot(ctx, tj)
			Expect(trainjob.IsCopseSnapshot(snapshot)).To(BeFalse(), "Trainer's snapshot of %s carries copse's labels: %v", tj.Name, snapshot.Labels)
			js := waitJobSet(ctx, tj)
			Expect(js.Annotations).NotTo(HaveKey(buildHashAnnotation), "JobSet %s", js.Name)
			snapshotUIDs[tj.Name], jobSetUIDs[tj.Name] = snapshot.UID, js.UID
		}
		runningPods(ctx, long, "node", 2)
		runningPods(ctx, timesOut, "node", 1)
		runningPods(ctx, finishes, "node", 1)

		By("uninstalling Trainer and turning copse's TrainJob front-end on")
		Expect(trainer.Stop(ctx)).To(Succeed())
		trainerStopped = true
		Expect(env.Operator.RestartWith(ctx, enableTrainJob)).To(Succeed())
		for _, tj := range all {
			got := getTrainJob(ctx, tj)
			Expect(condition(got, trainerv1alpha1.TrainJobComplete)).To(BeNil(), "%s finished under Trainer; the spec needs it to finish under copse", tj.Name)
			Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil(), "%s failed under Trainer", tj.Name)
		}

		By("copse adopts each snapshot in place (same object, copse's labels, the runtime's TTL) and keeps each JobSet")
		for _, tj := range all {
			Eventually(func(g Gomega) {
				// numNodes is copse's status field: Trainer never writes it.
				g.Expect(getTrainJob(ctx, tj).Status.NumNodes).NotTo(BeNil(), "copse has not written the status of %s", tj.Name)
				snapshot := &corev1.ConfigMap{}
				g.Expect(env.Client.Get(ctx, snapshotKey(tj), snapshot)).To(Succeed())
				g.Expect(snapshot.UID).To(Equal(snapshotUIDs[tj.Name]), "the snapshot of %s was recreated", tj.Name)
				g.Expect(snapshot.Labels).To(HaveKeyWithValue(labels.ManagedByKey, labels.ManagedByValue))
				runtime, err := trainjob.RuntimeFromSnapshot(getTrainJob(ctx, tj), snapshot)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(runtime.Spec.TTLSecondsAfterFinished).To(HaveValue(BeEquivalentTo(ttl)))
			}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "RuntimeSnapshotAdopted")).To(HaveLen(len(all)))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getTrainJob(ctx, long).Status.JobsStatus).To(ConsistOf(And(HaveField("Name", "node"),
				HaveField("Active", HaveValue(BeEquivalentTo(1))), HaveField("Ready", HaveValue(BeEquivalentTo(1))))))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("suspending the adopted TrainJob suspends its JobSet (the same one), and resuming runs it again")
		setSuspend(ctx, long, true)
		waitSuspended(ctx, long, "True")
		Eventually(func(g Gomega) {
			js, err := jobSetOf(ctx, long)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js.Spec.Suspend).To(HaveValue(BeTrue()))
			g.Expect(podsOf(ctx, long)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		setSuspend(ctx, long, false)
		resumed := waitSuspended(ctx, long, "False")
		Expect(resumed.Reason).To(Equal(trainerv1alpha1.TrainJobResumedReason))
		runningPods(ctx, long, "node", 2)
		js, err := jobSetOf(ctx, long)
		Expect(err).NotTo(HaveOccurred())
		Expect(js.UID).To(Equal(jobSetUIDs[long.Name]), "the JobSet of %s was recreated", long.Name)
		Expect(js.Annotations).NotTo(HaveKey(buildHashAnnotation), "the adopted JobSet was rebuilt as copse's")

		By("a TrainJob whose pods exit 0 is Complete with its JobSet's reason, then deleted after the runtime's TTL")
		done := waitCondition(ctx, finishes, trainerv1alpha1.TrainJobComplete, 2*wait)
		Expect(condition(done, trainerv1alpha1.TrainJobComplete).Reason).To(Equal("AllJobsCompleted"))
		expectGone(ctx, finishes, ttl*time.Second+wait)

		By("activeDeadlineSeconds, counted from the TrainJob's creation under Trainer, fails it and deletes its JobSet")
		failed := waitCondition(ctx, timesOut, trainerv1alpha1.TrainJobFailed, deadline*time.Second+wait)
		Expect(condition(failed, trainerv1alpha1.TrainJobFailed).Reason).To(Equal(trainerv1alpha1.TrainJobDeadlineExceededReason))
		Expect(condition(failed, trainerv1alpha1.TrainJobFailed).LastTransitionTime.Time).To(
			BeTemporally(">=", failed.CreationTimestamp.Add(deadline*time.Second)))
		expectGone(ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: timesOut.Name}}, wait)

		By("copse created no JobSet of its own for any of them")
		Consistently(func(g Gomega) {
			g.Expect(env.EventsWithReason(ctx, g, ns, "JobSetCreated")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Second).WithPolling(poll).Should(Succeed())
		Expect(env.Client.Delete(ctx, long)).To(Succeed())
	})
})

// buildHashAnnotation is the annotation copse stamps on the JobSets it
// builds; Trainer's have none.
const buildHashAnnotation = "copse.dev/trainjob-build-hash"

func enableTrainJob(cfg *configv1alpha1.OperatorConfiguration) {
	cfg.Controllers.TrainJob.Enabled = ptr.To(true)
}

func snapshotKey(tj *trainerv1alpha1.TrainJob) client.ObjectKey {
	return client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.RuntimeSnapshotSuffix}
}

// waitSnapshot waits until the TrainJob's runtime snapshot exists,
// controlled by it.
func waitSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob) *corev1.ConfigMap {
	GinkgoHelper()
	snapshot := &corev1.ConfigMap{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, snapshotKey(tj), snapshot)).To(Succeed())
		g.Expect(snapshot.OwnerReferences).To(ContainElement(And(HaveField("UID", getTrainJob(ctx, tj).UID),
			HaveField("Controller", HaveValue(BeTrue())))))
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return snapshot
}
