package trainjob_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// backend is what a scenario of the backend table needs to know about the
// object a TrainJob becomes. Everything else is read from the TrainJob's
// status and from pods, the same way for every backend.
type backend struct {
	kind trainerv1alpha1.RuntimeBackend
	// object is the TrainJob's backend object, named as the TrainJob, for
	// checks that it is gone.
	object func(tj *trainerv1alpha1.TrainJob) client.Object
	// restarts is the restart count the backend object reports.
	restarts func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) int32
	// step is the runtime's replicated job a pod of the TrainJob runs.
	step func(pod *corev1.Pod) string
	// podLabels are the labels the backend object gives the pods of a step.
	podLabels func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string
}

var jobSetBackend = backend{
	kind: trainerv1alpha1.RuntimeBackendJobSet,
	object: func(tj *trainerv1alpha1.TrainJob) client.Object {
		return &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: tj.Namespace, Name: tj.Name}}
	},
	restarts: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) int32 {
		js, err := jobSetOf(ctx, tj)
		g.Expect(err).NotTo(HaveOccurred())
		return js.Status.Restarts
	},
	step: func(pod *corev1.Pod) string { return pod.Labels[jobsetv1alpha2.ReplicatedJobNameKey] },
	podLabels: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string {
		js, err := jobSetOf(ctx, tj)
		g.Expect(err).NotTo(HaveOccurred())
		return replicatedJob(g, js, step).Template.Spec.Template.Labels
	},
}

var podCliqueSetBackend = backend{
	kind: trainerv1alpha1.RuntimeBackendPodCliqueSet,
	object: func(tj *trainerv1alpha1.TrainJob) client.Object {
		return &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: tj.Namespace, Name: tj.Name}}
	},
	restarts: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob) int32 {
		pcs, err := podCliqueSetOf(ctx, tj)
		g.Expect(err).NotTo(HaveOccurred())
		return pcs.Status.RestartCount
	},
	step: func(pod *corev1.Pod) string { return pod.Labels[labels.CliqueTemplateKey] },
	podLabels: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, step string) map[string]string {
		pcs, err := podCliqueSetOf(ctx, tj)
		g.Expect(err).NotTo(HaveOccurred())
		return cliqueTemplate(g, pcs, step).Labels
	},
}

// backends are the backends every scenario of the table runs on.
var backends = []backend{jobSetBackend, podCliqueSetBackend}

// onBackend makes a runtime build its TrainJobs into the backend.
func (b backend) onBackend(rt *trainerv1alpha1.TrainingRuntime) *trainerv1alpha1.TrainingRuntime {
	return withBackend(rt, b.kind)
}

// pods are the pods of the namespace (each scenario runs one TrainJob in a
// namespace of its own) that run the step; every pod for step "".
func (b backend) pods(ctx context.Context, g Gomega, namespace, step string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return step != "" && b.step(&p) != step })
}

// runningPods waits until n pods of the step run and are ready.
func (b backend) runningPods(ctx context.Context, namespace, step string, n int) []corev1.Pod {
	GinkgoHelper()
	var running []corev1.Pod
	Eventually(func(g Gomega) {
		running = slices.DeleteFunc(b.pods(ctx, g, namespace, step), func(p corev1.Pod) bool {
			return p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !framework.IsReady(&p)
		})
		g.Expect(running).To(HaveLen(n), "running pods of %s", step)
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return running
}

// expectNoPods waits until the namespace has no pod left.
func (b backend) expectNoPods(ctx context.Context, namespace string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(b.pods(ctx, g, namespace, "")).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// seen is when this process's pod watch delivered an event: its place in
// the watch (the API server's order) and the local time.
type seen struct {
	seq int
	at  time.Time
}

func (s seen) zero() bool { return s.seq == 0 }

// watchedPod is what the pod watch saw of one pod.
type watchedPod struct {
	name  string
	step  string
	added seen
	// terminated is the first event with a terminated main container.
	terminated seen
	exitCode   int32
}

// podWatch records the pods of a namespace as one watch delivers them,
// so that the order of two pods' events is the API server's, and their
// times are this process's clock (millisecond precision, unlike
// creationTimestamp and finishedAt).
type podWatch struct {
	mu   sync.Mutex
	seq  int
	pods map[types.UID]*watchedPod
	err  error
}

// watchPods starts a pod watch of the namespace that lasts the spec.
func (b backend) watchPods(ctx context.Context, namespace string) *podWatch {
	GinkgoHelper()
	w, err := env.Clientset.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	pw := &podWatch{pods: map[types.UID]*watchedPod{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				pw.mu.Lock()
				if ev.Type == watch.Error {
					pw.err = apierrors.FromObject(ev.Object)
				}
				pw.mu.Unlock()
				continue
			}
			pw.record(pod, b.step(pod))
		}
	}()
	return pw
}

func (pw *podWatch) record(pod *corev1.Pod, step string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.seq++
	now := seen{seq: pw.seq, at: time.Now()}
	p, ok := pw.pods[pod.UID]
	if !ok {
		p = &watchedPod{name: pod.Name, step: step, added: now}
		pw.pods[pod.UID] = p
	}
	if !p.terminated.zero() {
		return
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			p.terminated, p.exitCode = now, c.State.Terminated.ExitCode
			return
		}
	}
}

// snapshot is what the watch saw so far, by UID.
func (pw *podWatch) snapshot(g Gomega) map[types.UID]watchedPod {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	g.Expect(pw.err).NotTo(HaveOccurred(), "pod watch")
	out := make(map[types.UID]watchedPod, len(pw.pods))
	for uid, p := range pw.pods {
		out[uid] = *p
	}
	return out
}

// restartTimes collects, per backend, the time scenario 2 measured from
// the failure to every replacement pod created, for the suite's summary.
var restartTimes = struct {
	sync.Mutex
	byBackend map[trainerv1alpha1.RuntimeBackend]time.Duration
}{byBackend: map[trainerv1alpha1.RuntimeBackend]time.Duration{}}

var _ = ReportAfterSuite("TrainJob restart time per backend", func(report Report) {
	restartTimes.Lock()
	defer restartTimes.Unlock()
	var parts []string
	for _, b := range backends {
		if d, ok := restartTimes.byBackend[b.kind]; ok {
			parts = append(parts, fmt.Sprintf("%s backend %.1fs", b.kind, d.Seconds()))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(os.Stdout, "restart (failed container seen -> every replacement pod created): %s\n", strings.Join(parts, ", "))
	}
})

// torchRuntime is Kubeflow's torch-distributed runtime as a TrainingRuntime
// of the namespace on the backend, failing at the first failed pod, with
// maxRestarts restarts of the whole TrainJob if set.
func (b backend) torchRuntime(ctx context.Context, namespace string, maxRestarts *int32) {
	GinkgoHelper()
	rt := b.onBackend(runtimeCopy(namespace, "torch-distributed"))
	if maxRestarts != nil {
		rt.Spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: *maxRestarts}
	}
	createRuntime(ctx, rt)
}

// torchTrainJob is an SDK-shaped TrainJob of nodes nodes on the namespace's
// torch-distributed runtime, whose pods end one second after deletion.
func torchTrainJob(namespace string, nodes int32) *trainerv1alpha1.TrainJob {
	tj := onTrainingRuntime(sdkTrainJob(namespace, "train", "torch-distributed", nodes))
	withGracePeriod(tj, trainjob.NodeName, 1)
	return tj
}

// expectComplete waits for Complete and checks that it is final and that
// the trainer's Job succeeded.
func expectComplete(ctx context.Context, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	GinkgoHelper()
	got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
	Expect(condition(got, trainerv1alpha1.TrainJobComplete).Reason).To(Equal(jobsetconstants.AllJobsCompletedReason))
	Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil())
	Eventually(func(g Gomega) {
		g.Expect(getTrainJob(ctx, tj).Status.JobsStatus).To(ContainElement(And(HaveField("Name", trainjob.NodeName),
			HaveField("Succeeded", HaveValue(BeEquivalentTo(1))), HaveField("Failed", HaveValue(BeEquivalentTo(0))),
			HaveField("Active", HaveValue(BeEquivalentTo(0))))))
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return got
}

// expectFinalJobsStatus waits until the TrainJob's jobsStatus is final: the
// node job counted as failed jobs, and no job active, ready or suspended.
func expectFinalJobsStatus(ctx context.Context, tj *trainerv1alpha1.TrainJob, failed int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		jobs := getTrainJob(ctx, tj).Status.JobsStatus
		g.Expect(jobs).To(ContainElement(And(HaveField("Name", trainjob.NodeName), HaveField("Failed", HaveValue(Equal(failed))))))
		for _, job := range jobs {
			g.Expect(job.Active).To(HaveValue(BeZero()), "job %s", job.Name)
			g.Expect(job.Ready).To(HaveValue(BeZero()), "job %s", job.Name)
			g.Expect(job.Suspended).To(HaveValue(BeZero()), "job %s", job.Name)
		}
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// scenario is one row of the backend table.
type scenario struct {
	name string
	run  func(ctx context.Context, b backend)
}

var backendScenarios = []scenario{
	{"runs to Complete, its trainer pods succeeded", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-success")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 2)
		withPods(tj, trainjob.NodeName, simulate(2*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := expectComplete(ctx, tj)
		Expect(got.Status.NumNodes).To(HaveValue(BeEquivalentTo(2)))
		Eventually(func(g Gomega) {
			pods := b.pods(ctx, g, ns, trainjob.NodeName)
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	}},

	{"restarts once after a failed pod and then completes, reporting one restart", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-restart")
		b.torchRuntime(ctx, ns, ptr.To[int32](1))
		tj := torchTrainJob(ns, 2) // the first attempt's pods run until told otherwise
		pw := b.watchPods(ctx, ns)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("failing one pod of the first attempt")
		first := b.runningPods(ctx, ns, trainjob.NodeName, 2)
		victim := first[0]
		env.MakePodExit(ctx, &victim, "1")

		By("replacing every pod")
		var replacements []corev1.Pod
		var watched map[types.UID]watchedPod
		Eventually(func(g Gomega) {
			replacements = slices.DeleteFunc(b.pods(ctx, g, ns, trainjob.NodeName), func(p corev1.Pod) bool {
				return p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !framework.IsReady(&p) ||
					slices.ContainsFunc(first, func(old corev1.Pod) bool { return old.UID == p.UID })
			})
			g.Expect(replacements).To(HaveLen(2), "replacement pods running")
			watched = pw.snapshot(g)
			for _, p := range replacements {
				g.Expect(watched).To(HaveKey(p.UID), "the watch has not delivered %s yet", p.Name)
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		failed := watched[victim.UID]
		Expect(failed.terminated.zero()).To(BeFalse(), "the watch never saw the failed pod terminated")
		Expect(failed.exitCode).To(BeEquivalentTo(1))
		var lastCreated time.Time
		for _, p := range replacements {
			added := watched[p.UID].added
			Expect(added.seq).To(BeNumerically(">", failed.terminated.seq), "replacement %s created before the failure", p.Name)
			if added.at.After(lastCreated) {
				lastCreated = added.at
			}
		}
		took := lastCreated.Sub(failed.terminated.at)
		AddReportEntry(fmt.Sprintf("restart: %s backend", b.kind), fmt.Sprintf("%.1fs", took.Seconds()), ReportEntryVisibilityAlways)
		GinkgoWriter.Printf("restart: %s backend %.1fs from the failed container seen to every replacement pod created\n", b.kind, took.Seconds())
		restartTimes.Lock()
		restartTimes.byBackend[b.kind] = took
		restartTimes.Unlock()

		By("completing once the replacements succeed, with one restart counted")
		for i := range replacements {
			env.MakePodExit(ctx, &replacements[i], "0")
		}
		expectComplete(ctx, tj)
		Eventually(func(g Gomega) int32 { return b.restarts(ctx, g, tj) }).
			WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(BeEquivalentTo(1))
	}},

	{"fails with ReachedMaxRestarts once its restarts are used up", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-max-restarts")
		b.torchRuntime(ctx, ns, ptr.To[int32](1))
		tj := torchTrainJob(ns, 2)
		withPods(tj, trainjob.NodeName, simulate(time.Second, "1"))
		pw := b.watchPods(ctx, ns)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobFailed).Reason).To(Equal(jobsetconstants.ReachedMaxRestartsReason))
		Expect(condition(got, trainerv1alpha1.TrainJobComplete)).To(BeNil())
		Expect(b.restarts(ctx, Default, tj)).To(BeEquivalentTo(1))
		By("having seen a pod of each attempt fail")
		Eventually(func(g Gomega) {
			var failedPods []string
			for _, p := range pw.snapshot(g) {
				g.Expect(p.step).To(Equal(trainjob.NodeName))
				if !p.terminated.zero() && p.exitCode == 1 {
					failedPods = append(failedPods, p.name)
				}
			}
			g.Expect(len(failedPods)).To(BeNumerically(">=", 2), "pods seen failing: %v", failedPods)
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	}},

	{"fails with FailedJobs at its first failed pod when the runtime has no failurePolicy, restarting nothing", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-failed-jobs")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 2)
		withPods(tj, trainjob.NodeName, simulate(time.Second, "1"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobFailed).Reason).To(Equal(jobsetconstants.FailedJobsReason))
		Expect(condition(got, trainerv1alpha1.TrainJobComplete)).To(BeNil())
		Expect(b.restarts(ctx, Default, tj)).To(BeZero())
	}},

	{"fails with DeadlineExceeded when activeDeadlineSeconds passes, and deletes its backend object and pods", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-deadline")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 2) // the pods run until deleted
		tj.Spec.ActiveDeadlineSeconds = 4
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		b.runningPods(ctx, ns, trainjob.NodeName, 2)

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobDeadlineExceededReason))
		Expect(failed.LastTransitionTime.Time).To(BeTemporally(">=", got.CreationTimestamp.Add(4*time.Second)), "failed before the deadline")
		Expect(condition(got, trainerv1alpha1.TrainJobComplete)).To(BeNil())

		By("deleting the backend object, and with it every pod")
		expectGone(ctx, b.object(tj), wait)
		b.expectNoPods(ctx, ns)
		Consistently(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), b.object(tj))
		}).WithContext(ctx).WithTimeout(time.Second).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound),
			"the backend object of a failed TrainJob was created again")

		By("keeping the last jobsStatus, final: the node job that was running counts as failed, nothing active")
		expectFinalJobsStatus(ctx, tj, 1)
	}},

	{"is deleted with everything it owns ttlSecondsAfterFinished after it completed", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-ttl")
		const ttl = 3
		createRuntime(ctx, b.onBackend(ttlRuntime(ns, ptr.To[int32](ttl))))
		tj, finished := completeAt(ctx, ns)

		deleted := deletedAt(ctx, tj, wait)
		Expect(deleted).To(BeTemporally(">=", finished.Add(ttl*time.Second)), "deleted before its TTL")
		Expect(deleted).To(BeTemporally("<=", finished.Add((ttl+3)*time.Second)), "deleted late")
		expectGone(ctx, &trainerv1alpha1.TrainJob{ObjectMeta: tj.ObjectMeta}, wait)
		expectGone(ctx, b.object(tj), wait)
		expectGone(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name + trainjob.RuntimeSnapshotSuffix}}, wait)
		b.expectNoPods(ctx, ns)
	}},

	{"stops its pods while suspended and, resumed, counts activeDeadlineSeconds from the resume", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-suspend")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 1)
		tj.Spec.ActiveDeadlineSeconds = 5
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		b.runningPods(ctx, ns, trainjob.NodeName, 1)
		created := getTrainJob(ctx, tj).CreationTimestamp.Time

		By("suspending it: Suspended=True and no pod left")
		setSuspend(ctx, tj, true)
		Expect(waitSuspended(ctx, tj, metav1.ConditionTrue).Reason).To(Equal(trainerv1alpha1.TrainJobSuspendedReason))
		b.expectNoPods(ctx, ns)
		time.Sleep(time.Until(created.Add(3 * time.Second)))

		By("resuming it: Suspended=False with reason Resumed, and pods again")
		setSuspend(ctx, tj, false)
		resumed := waitSuspended(ctx, tj, metav1.ConditionFalse)
		Expect(resumed.Reason).To(Equal(trainerv1alpha1.TrainJobResumedReason))
		b.runningPods(ctx, ns, trainjob.NodeName, 1)

		By("not failing it when the deadline counted from creation passes")
		expectNotFailedUntil(ctx, tj, created.Add(6*time.Second))

		By("failing it a full deadline after the resume")
		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
		failed := condition(got, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobDeadlineExceededReason))
		Expect(failed.LastTransitionTime.Time).To(BeTemporally(">=", resumed.LastTransitionTime.Add(5*time.Second)))
	}},

	{"when its backend object is deleted from outside mid-run: a JobSet is rebuilt and completes (as Kubeflow Trainer), a PodCliqueSet fails it with BackendDeleted", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-deleted")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 2)
		// Long enough to be deleted mid-run.
		withPods(tj, trainjob.NodeName, simulate(10*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		first := b.runningPods(ctx, ns, trainjob.NodeName, 2)

		By("deleting the backend object as a user would (background propagation)")
		object := b.object(tj)
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(object), object)).To(Succeed())
		oldUID := object.GetUID()
		Eventually(func(g Gomega) {
			backend := getTrainJob(ctx, tj).Status.Backend
			g.Expect(backend).NotTo(BeNil(), "status.backend")
			g.Expect(backend.UID).To(Equal(oldUID))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Expect(env.Client.Delete(ctx, object)).To(Succeed())

		if b.kind == trainerv1alpha1.RuntimeBackendPodCliqueSet {
			By("failing the TrainJob with BackendDeleted and a Warning event; no new PodCliqueSet (it held the restart count and the exit-0 records)")
			got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobFailed, wait)
			failed := condition(got, trainerv1alpha1.TrainJobFailed)
			Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobBackendDeletedReason))
			Expect(failed.Message).To(ContainSubstring("PodCliqueSet train was deleted before the TrainJob finished"))
			Eventually(func(g Gomega) {
				g.Expect(env.EventsWithReason(ctx, g, ns, trainerv1alpha1.TrainJobBackendDeletedReason)).
					To(ContainElement(HaveField("Type", corev1.EventTypeWarning)))
			}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
			b.expectNoPods(ctx, ns)
			Consistently(func() error {
				return env.Client.Get(ctx, client.ObjectKeyFromObject(tj), b.object(tj))
			}).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound),
				"a new PodCliqueSet was created after the TrainJob's was deleted from outside")
			expectFinalJobsStatus(ctx, tj, 1)
			return
		}

		By("getting a new backend object and new pods, and completing")
		Eventually(func(g Gomega) {
			rebuilt := b.object(tj)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rebuilt), rebuilt)).To(Succeed())
			g.Expect(rebuilt.GetUID()).NotTo(Equal(oldUID))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		got := expectComplete(ctx, tj)
		Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil())
		Eventually(func(g Gomega) {
			pods := b.pods(ctx, g, ns, trainjob.NodeName)
			g.Expect(pods).To(HaveLen(2), "only the new run's pods are left")
			for _, p := range pods {
				g.Expect(p.UID).NotTo(BeElementOf(first[0].UID, first[1].UID))
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	}},

	{"runs, once resumed, with the runtimePatches changed while it was suspended", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-repatch")
		rack := lastRack(ctx)
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 2)
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, placementPatch("vision", rack))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		expectPlaced(ctx, b.runningPods(ctx, ns, trainjob.NodeName, 2), "vision", rack)

		By("suspending it until no pod is left")
		setSuspend(ctx, tj, true)
		waitSuspended(ctx, tj, metav1.ConditionTrue)
		b.expectNoPods(ctx, ns)

		By("changing the placement patch while suspended: the backend object is rebuilt with it")
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			for i := range got.Spec.RuntimePatches {
				if got.Spec.RuntimePatches[i].Manager == placementManager {
					got.Spec.RuntimePatches[i] = placementPatch("audio", rack)
				}
			}
			g.Expect(env.Client.Update(ctx, got)).To(Succeed())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(b.podLabels(ctx, g, tj, trainjob.NodeName)).To(HaveKeyWithValue(teamLabel, "audio"))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("resuming it: its pods carry the new placement")
		setSuspend(ctx, tj, false)
		expectPlaced(ctx, b.runningPods(ctx, ns, trainjob.NodeName, 2), "audio", rack)
	}},

	{"creates the trainer's pods only after both initializers succeeded", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-initializers")
		createRuntime(ctx, b.onBackend(initializerRuntime(ns)))
		tj := onTrainingRuntime(sdkTrainJob(ns, "train", "with-initializers", 2))
		withPods(tj, trainjob.DatasetInitializerName, simulate(time.Second, "0"))
		withPods(tj, trainjob.ModelInitializerName, simulate(3*time.Second, "0"))
		withPods(tj, trainjob.NodeName, simulate(time.Second, "0"))
		pw := b.watchPods(ctx, ns)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		expectComplete(ctx, tj)
		watched := pw.snapshot(Default)
		var lastInitializer watchedPod
		initializers := 0
		for _, p := range watched {
			if p.step == trainjob.DatasetInitializerName || p.step == trainjob.ModelInitializerName {
				initializers++
				Expect(p.terminated.zero()).To(BeFalse(), "initializer %s not seen ending", p.name)
				Expect(p.exitCode).To(BeZero(), "initializer %s", p.name)
				if p.terminated.seq > lastInitializer.terminated.seq {
					lastInitializer = p
				}
			}
		}
		Expect(initializers).To(Equal(2), "one pod per initializer")
		pods := b.pods(ctx, Default, ns, "")
		trainers := 0
		for _, p := range pods {
			if b.step(&p) != trainjob.NodeName {
				continue
			}
			trainers++
			Expect(watched[p.UID].added.seq).To(BeNumerically(">", lastInitializer.terminated.seq),
				"trainer pod %s created before initializer %s ended", p.Name, lastInitializer.name)
			for _, ip := range pods {
				if ip.Name != lastInitializer.name {
					continue
				}
				finished := ip.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
				Expect(p.CreationTimestamp.Time).NotTo(BeTemporally("<", finished),
					"trainer pod %s created before initializer %s finished", p.Name, ip.Name)
			}
		}
		Expect(trainers).To(Equal(2))
	}},

	{"completes an MPI TrainJob when its launcher succeeds, and ends the nodes", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-mpi")
		createRuntime(ctx, b.onBackend(runtimeCopy(ns, "deepspeed-distributed")))
		tj := onTrainingRuntime(sdkTrainJob(ns, "train", "deepspeed-distributed", 3))
		withPods(tj, trainjob.LauncherName, simulate(2*time.Second, "0"))
		withGracePeriod(tj, trainjob.NodeName, 1) // the nodes run sshd until they are ended
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		b.runningPods(ctx, ns, trainjob.NodeName, 2)

		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		Expect(condition(got, trainerv1alpha1.TrainJobComplete).Reason).To(Equal(jobsetconstants.AllJobsCompletedReason),
			"the same reason on both backends: JobSet's success policy completes the JobSet with it")
		Expect(condition(got, trainerv1alpha1.TrainJobFailed)).To(BeNil())
		By("ending the nodes, which never exited by themselves")
		Eventually(func(g Gomega) {
			for _, p := range b.pods(ctx, g, ns, trainjob.NodeName) {
				g.Expect(p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed).
					To(BeTrue(), "node pod %s still runs (%s)", p.Name, p.Status.Phase)
			}
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobFailed)).To(BeNil())
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(poll).Should(Succeed())
	}},

	{"leaves every pod of a gang one node larger than the cluster Pending, none bound", func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "be-gang")
		createRuntime(ctx, b.onBackend(gangRuntime(ns)))
		nodes := int32(len(env.Topology.Placements()) + 1) // one node more than the cluster has
		tj := gpuTrainJob(ns, "too-big", nodes)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(b.pods(ctx, g, ns, trainjob.NodeName)).To(HaveLen(int(nodes)))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, p := range b.pods(ctx, g, ns, "") {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s was bound although its gang cannot fit", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
			}
		}).WithContext(ctx).WithTimeout(6 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(env.Client.Delete(ctx, tj)).To(Succeed())
	}},
}

// initializerRuntime is a runtime without mlPolicy whose dataset and model
// initializers run first and whose trainer depends on both having
// completed.
func initializerRuntime(namespace string) *trainerv1alpha1.TrainingRuntime {
	rt := plainRuntime(namespace, "with-initializers")
	step := func(name, ancestor string) jobsetv1alpha2.ReplicatedJob {
		return jobsetv1alpha2.ReplicatedJob{Name: name, Template: batchJobTemplate(map[string]string{trainjob.AncestorLabel: ancestor},
			corev1.Container{Name: name, Image: "registry.example/" + name + ":v1"})}
	}
	node := rt.Spec.Template.Spec.ReplicatedJobs[0]
	node.DependsOn = []jobsetv1alpha2.DependsOn{
		{Name: trainjob.DatasetInitializerName, Status: jobsetv1alpha2.DependencyComplete},
		{Name: trainjob.ModelInitializerName, Status: jobsetv1alpha2.DependencyComplete},
	}
	rt.Spec.Template.Spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{
		step(trainjob.DatasetInitializerName, trainjob.AncestorDatasetInitializer),
		step(trainjob.ModelInitializerName, trainjob.AncestorModelInitializer),
		node,
	}
	failFast(&rt.Spec)
	return rt
}

var _ = Describe("A TrainJob on each backend", Label("trainjob"), func() {
	for _, b := range backends {
		Context(fmt.Sprintf("on the %s backend", b.kind), func() {
			for _, s := range backendScenarios {
				It(s.name, func(ctx context.Context) { s.run(ctx, b) })
			}
		})
	}
})
