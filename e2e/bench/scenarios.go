package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// holdGate is the scheduling gate of the creation scenario's pods: the
// scheduler ignores gated pods, so neither copse's pods nor the plain
// client's are scheduled, bound or started during (or after) the
// measurement, and they are deleted at once afterwards.
const holdGate = "bench.copse.dev/hold"

// Measurement names (Run.Seconds keys).
const (
	// creation: from just before the create request to the moment the
	// watch delivered the N-th pod.
	MeasureAllPodsCreated = "allPodsCreated"
	// restart: from the moment the watch saw the failed pod's container
	// terminated, to the last replacement pod seen created / Running; the
	// *FromFinishedAt variants start at that container's finishedAt
	// (whole seconds, so up to 1 s more).
	MeasureReplacementsCreated               = "replacementsCreated"
	MeasureReplacementsRunning               = "replacementsRunning"
	MeasureReplacementsCreatedFromFinishedAt = "replacementsCreatedFromFinishedAt"
	MeasureReplacementsRunningFromFinishedAt = "replacementsRunningFromFinishedAt"
	// restart breakdown, from the same start: the first and the last pod of
	// the failed attempt seen with a deletionTimestamp, the last one seen
	// gone, the
	// new child object (PodClique / Job) seen created, the first
	// replacement pod seen created.
	MeasureOldPodsDeleting         = "oldPodsDeleting"
	MeasureOldPodsAllDeleting      = "oldPodsAllDeleting"
	MeasureOldPodsGone             = "oldPodsGone"
	MeasureChildRecreated          = "childRecreated"
	MeasureFirstReplacementCreated = "firstReplacementCreated"
	// completion: from the moment the watch saw the last pod's container
	// terminated with exit code 0, to the workload's success seen
	// (PodCliqueSet phase Succeeded / JobSet condition Completed); the
	// FromFinishedAt variant starts at the latest finishedAt.
	MeasureLastExitToSucceeded               = "lastExitToSucceeded"
	MeasureLastExitToSucceededFromFinishedAt = "lastExitToSucceededFromFinishedAt"
	MeasureCreateToSucceeded                 = "createToSucceeded"
	// queued start: from just before the first create to the last create
	// answered (admission webhooks included), to the last of the
	// workloads' Kueue Workloads seen (made by Kueue's job integration),
	// seen Admitted, and to the last of their pods seen Running.
	MeasureAllCreated       = "allCreated"
	MeasureAllWorkloadsSeen = "allWorkloadsSeen"
	MeasureAllAdmitted      = "allAdmitted"
	MeasureAllPodsRunning   = "allPodsRunning"
)

// trainingPCS is a Training PodCliqueSet of one replica with one clique of
// n pods.
func trainingPCS(namespace, name string, n int32, maxRestarts int32, podAnnotations map[string]string, gated bool) *copsev1alpha1.PodCliqueSet {
	spec := framework.PodSpec(0)
	if gated {
		spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	}
	worker := framework.CliqueTemplate("worker", n, spec)
	worker.Annotations = podAnnotations
	return framework.NewTrainingPodCliqueSet(namespace, name, 1, maxRestarts, worker)
}

// nthTime is the n-th earliest of the non-zero times, or zero if there are
// fewer.
func nthTime(times []time.Time, n int) time.Time {
	var set []time.Time
	for _, t := range times {
		if !t.IsZero() {
			set = append(set, t)
		}
	}
	if n <= 0 || len(set) < n {
		return time.Time{}
	}
	slices.SortFunc(set, func(a, b time.Time) int { return a.Compare(b) })
	return set[n-1]
}

func field(records []podRecord, get func(podRecord) time.Time) []time.Time {
	out := make([]time.Time, 0, len(records))
	for _, r := range records {
		out = append(out, get(r))
	}
	return out
}

func countSet(times []time.Time) int {
	n := 0
	for _, t := range times {
		if !t.IsZero() {
			n++
		}
	}
	return n
}

func selector(kv ...string) klabels.Selector {
	set := klabels.Set{}
	for i := 0; i+1 < len(kv); i += 2 {
		set[kv[i]] = kv[i+1]
	}
	return klabels.SelectorFromSet(set)
}

// waitPods waits until at least n pods matching sel have the time get set.
func waitPods(ctx context.Context, timeout time.Duration, t *podTracker, sel klabels.Selector, n int, what string, get func(podRecord) time.Time) error {
	return waitFor(ctx, timeout, fmt.Sprintf("%d pods %s (%s)", n, what, sel), func() (bool, string) {
		if err := t.Err(); err != nil {
			return false, err.Error()
		}
		got := countSet(field(t.Pods(sel), get))
		return got >= n, fmt.Sprintf("%d so far", got)
	})
}

func added(r podRecord) time.Time      { return r.Added }
func running(r podRecord) time.Time    { return r.Running }
func terminated(r podRecord) time.Time { return r.Terminated }

// --- creation ---------------------------------------------------------------

// creationCopse creates a Training PodCliqueSet of n gated pods and times
// the creation of its n pods.
func (b *Bench) creationCopse(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioCreation, System: SystemCopse, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-create-copse", func(ctx context.Context, ns string) error {
		pods, pcsT, pclqT, err := b.watchCopse(ctx, ns)
		if err != nil {
			return err
		}
		cost, err := b.startOperatorCost(ctx)
		if err != nil {
			return err
		}
		pcs := trainingPCS(ns, b.nextName(), int32(n), 0, nil, true)
		t0 := time.Now()
		if err := b.env.Client.Create(ctx, pcs); err != nil {
			return fmt.Errorf("create PodCliqueSet: %w", err)
		}
		if err := waitPods(ctx, b.opts.RunTimeout, pods, klabels.Everything(), n, "created", added); err != nil {
			return err
		}
		run.Seconds[MeasureAllPodsCreated] = nthTime(field(pods.Pods(klabels.Everything()), added), n).Sub(t0).Seconds()
		waitQuiet(ctx, pods, pcsT, pclqT)
		if err := cost.finish(ctx, &run, n); err != nil {
			return err
		}
		run.StatusWrites, run.Objects = statusWrites(pcsT, pclqT), objectCounts(pcsT, pclqT)
		if b.referencePod == nil {
			return b.captureReferencePod(ctx, ns)
		}
		return nil
	})
	return b.record(run, err)
}

// captureReferencePod keeps one of copse's pods as the plain client's
// template.
func (b *Bench) captureReferencePod(ctx context.Context, ns string) error {
	list, err := b.env.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("no copse pod to copy for the plain client")
	}
	b.referencePod = list.Items[0].DeepCopy()
	return nil
}

// referencePod is the plain client's i-th pod: copse's pod with its
// identity (index label, hostname, index variable) set to i, and without
// what the API server and copse's ownership added (owner reference, service
// account token volume, defaulted tolerations and priority). No owner
// reference means the garbage collector leaves it alone, as it should for a
// client-owned pod.
func referencePod(template *corev1.Pod, namespace string, i int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:    namespace,
		GenerateName: template.GenerateName,
		Labels:       maps.Clone(template.Labels),
		Annotations:  maps.Clone(template.Annotations),
	}}
	pod.Spec = *template.Spec.DeepCopy()
	spec := &pod.Spec
	spec.NodeName = ""
	spec.Priority = nil
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") })
	spec.Tolerations = slices.DeleteFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.TolerationSeconds != nil })
	index := strconv.Itoa(i)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[labels.PodIndexKey] = index
	if clique := template.Labels[labels.PodCliqueKey]; clique != "" {
		spec.Hostname = naming.PodHostname(clique, i)
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for c := range containers {
			containers[c].VolumeMounts = slices.DeleteFunc(containers[c].VolumeMounts, func(m corev1.VolumeMount) bool {
				return strings.HasPrefix(m.Name, "kube-api-access-")
			})
			for e := range containers[c].Env {
				if containers[c].Env[e].Name == groveconstants.EnvVarPodIndex {
					containers[c].Env[e].Value = index
				}
			}
		}
	}
	return pod
}

// referenceClient is a clientset with copse's identity (the chart's
// ServiceAccount, so the same RBAC and the same FlowSchema and priority
// level): without a client-side rate limit (unthrottled), or limited like
// copse's, by client-go's token bucket with the operator's QPS and burst (a
// fresh, full bucket per run, as copse's is after the idle time between
// runs).
func (b *Bench) referenceClient(unthrottled bool) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", b.operatorKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reference client: %w", err)
	}
	if unthrottled {
		cfg.QPS = -1 // client-go: no rate limiter
	} else {
		cfg.QPS, cfg.Burst = b.qps, b.burst
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(b.qps, b.burst)
	}
	return kubernetes.NewForConfig(cfg)
}

// sameQPSParallelism is the same-QPS client's creates in flight: more than
// its token bucket ever lets through at once.
const sameQPSParallelism = 64

// creationReference creates n copies of copse's pod with a reference
// client, at most parallelism at once, and times them like copse's: system
// SystemAPILimit (unthrottled) or SystemSameQPSClient.
func (b *Bench) creationReference(ctx context.Context, rep, n int, system string, parallelism int) Run {
	run := Run{Scenario: ScenarioCreation, System: system, Size: n, Repetition: rep, Parallelism: parallelism, Seconds: map[string]float64{}, started: time.Now()}
	if b.referencePod == nil {
		return b.record(run, fmt.Errorf("no copse pod was captured to copy (the copse creation run failed)"))
	}
	err := b.inNamespace(ctx, "bench-create-ref", func(ctx context.Context, ns string) error {
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		cs, err := b.referenceClient(system == SystemAPILimit)
		if err != nil {
			return err
		}
		objs := make([]*corev1.Pod, n)
		for i := range objs {
			objs[i] = referencePod(b.referencePod, ns, i)
		}
		t0 := time.Now()
		if err := createPods(ctx, cs, objs, parallelism); err != nil {
			return err
		}
		if err := waitPods(ctx, b.opts.RunTimeout, pods, klabels.Everything(), n, "created", added); err != nil {
			return err
		}
		run.Seconds[MeasureAllPodsCreated] = nthTime(field(pods.Pods(klabels.Everything()), added), n).Sub(t0).Seconds()
		run.Writes = &WriteCost{Writes: float64(n), ByMethod: map[string]float64{"POST": float64(n)}, PodsCreated: n, WritesPerPod: 1}
		return nil
	})
	return b.record(run, err)
}

// creationReferences runs every reference of one size and repetition: the
// API-limit client at each parallelism, then the same-QPS client.
func (b *Bench) creationReferences(ctx context.Context, rep, n int) {
	for _, p := range b.opts.ReferenceParallelism {
		b.creationReference(ctx, rep, n, SystemAPILimit, p)
	}
	if b.sameQPSReference() {
		b.creationReference(ctx, rep, n, SystemSameQPSClient, sameQPSParallelism)
	}
}

// sameQPSReference tells whether the same-QPS client runs: unless it is
// turned off, whenever copse has a client-side rate limit (qps > 0); without
// one, that client would be the API-limit client again.
func (b *Bench) sameQPSReference() bool {
	return !b.opts.WithoutSameQPSReference && b.qps > 0
}

// createPods creates pods with at most parallelism requests in flight.
func createPods(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod, parallelism int) error {
	work := make(chan *corev1.Pod)
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for range max(parallelism, 1) {
		wg.Go(func() {
			for pod := range work {
				if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod: %w", err)
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// --- restart ----------------------------------------------------------------

// failPod makes a running simulated pod exit 1 at once (framework's
// MakePodExit, without Gomega).
func (b *Bench) failPod(ctx context.Context, namespace, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1ms",%q:"1"}}}`, cluster.AnnotationRunDuration, cluster.AnnotationExitCode)
	_, err := b.env.Clientset.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("make pod %s exit 1: %w", name, err)
	}
	return nil
}

// restartMeasure is the common part of both systems' restart runs: wait
// until the first attempt's n pods run, call beforeFailure (which starts the
// cost measurement), fail one pod, and time the next attempt's n pods.
// attemptKey is the label that carries the attempt; children tracks the objects a restart deletes and creates afresh
// (PodCliques, Jobs), for the breakdown.
func (b *Bench) restartMeasure(ctx context.Context, run *Run, ns string, pods *podTracker, children *objTracker, n int, attemptKey string, beforeFailure func() error) error {
	first, next := selector(attemptKey, "0"), selector(attemptKey, "1")
	if err := waitPods(ctx, b.opts.RunTimeout, pods, first, n, "Running", running); err != nil {
		return err
	}
	victim := pods.Pods(first)[0]
	if err := beforeFailure(); err != nil {
		return err
	}
	if err := b.failPod(ctx, ns, victim.Name); err != nil {
		return err
	}
	if err := waitPods(ctx, b.opts.RunTimeout, pods, next, n, "Running", running); err != nil {
		return err
	}
	var failedSeen, finishedAt time.Time
	for _, r := range pods.Pods(first) {
		if r.UID == victim.UID {
			failedSeen, finishedAt = r.Terminated, r.FinishedAt
		}
	}
	if failedSeen.IsZero() {
		return fmt.Errorf("the failed pod %s was never seen terminated", victim.Name)
	}
	replacements := pods.Pods(next)
	createdAt := nthTime(field(replacements, added), n)
	runningAt := nthTime(field(replacements, running), n)
	run.Seconds[MeasureReplacementsCreated] = createdAt.Sub(failedSeen).Seconds()
	run.Seconds[MeasureReplacementsRunning] = runningAt.Sub(failedSeen).Seconds()
	run.Seconds[MeasureReplacementsCreatedFromFinishedAt] = createdAt.Sub(finishedAt).Seconds()
	run.Seconds[MeasureReplacementsRunningFromFinishedAt] = runningAt.Sub(finishedAt).Seconds()
	run.Seconds[MeasureFirstReplacementCreated] = nthTime(field(replacements, added), 1).Sub(failedSeen).Seconds()
	old := pods.Pods(first)
	deleting := field(old, func(r podRecord) time.Time { return r.Deleting })
	if first := nthTime(deleting, 1); !first.IsZero() {
		run.Seconds[MeasureOldPodsDeleting] = first.Sub(failedSeen).Seconds()
	}
	if last := nthTime(deleting, countSet(deleting)); !last.IsZero() {
		run.Seconds[MeasureOldPodsAllDeleting] = last.Sub(failedSeen).Seconds()
	}
	if gone := field(old, func(r podRecord) time.Time { return r.Deleted }); countSet(gone) == len(old) {
		run.Seconds[MeasureOldPodsGone] = nthTime(gone, len(gone)).Sub(failedSeen).Seconds()
	}
	for _, c := range children.Objects() {
		if c.Added.After(failedSeen) {
			run.Seconds[MeasureChildRecreated] = c.Added.Sub(failedSeen).Seconds()
		}
	}
	return nil
}

// restartCopse: a Training replica of n pods with maxRestarts 1; one pod
// exits 1; copse restarts the replica.
func (b *Bench) restartCopse(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioRestart, System: SystemCopse, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-restart-copse", func(ctx context.Context, ns string) error {
		pods, pcsT, pclqT, err := b.watchCopse(ctx, ns)
		if err != nil {
			return err
		}
		if err := b.env.Client.Create(ctx, trainingPCS(ns, b.nextName(), int32(n), 1, nil, false)); err != nil {
			return fmt.Errorf("create PodCliqueSet: %w", err)
		}
		var cost *costProbe
		var before map[string]int
		err = b.restartMeasure(ctx, &run, ns, pods, pclqT, n, labels.AttemptKey, func() error {
			waitQuiet(ctx, pods, pcsT, pclqT)
			before = statusWrites(pcsT, pclqT)
			var err error
			cost, err = b.startOperatorCost(ctx)
			return err
		})
		if err != nil {
			return err
		}
		waitQuiet(ctx, pods, pcsT, pclqT)
		run.StatusWrites, run.Objects = subCounts(statusWrites(pcsT, pclqT), before), objectCounts(pcsT, pclqT)
		return cost.finish(ctx, &run, n)
	})
	return b.record(run, err)
}

// restartJobSet: the same on a JobSet of one replicated Job of n pods.
func (b *Bench) restartJobSet(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioRestart, System: SystemJobSet, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-restart-jobset", func(ctx context.Context, ns string) error {
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		jsT, err := trackObjects(ctx, b.dyn, framework.JobSetGVR, ns)
		if err != nil {
			return err
		}
		jobT, err := trackObjects(ctx, b.dyn, jobGVR, ns)
		if err != nil {
			return err
		}
		js, err := NewJobSet(ns, b.nextName(), int32(n), framework.PodSpec(0), nil, 1)
		if err != nil {
			return err
		}
		if _, err := b.dyn.Resource(framework.JobSetGVR).Namespace(ns).Create(ctx, js, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create JobSet: %w", err)
		}
		var cost *costProbe
		var before map[string]int
		err = b.restartMeasure(ctx, &run, ns, pods, jobT, n, LabelJobSetRestartAttempt, func() error {
			waitQuiet(ctx, pods, jsT, jobT)
			before = statusWrites(jsT)
			var err error
			cost, err = b.startJobSetCost()
			return err
		})
		if err != nil {
			return err
		}
		waitQuiet(ctx, pods, jsT, jobT)
		run.StatusWrites = subCounts(statusWrites(jsT), before)
		return cost.finish(ctx, &run, n)
	})
	return b.record(run, err)
}

// --- completion -------------------------------------------------------------

// completionMeasure waits for success (succeeded returns its watch time, or
// zero) and times it from the last exit.
func (b *Bench) completionMeasure(ctx context.Context, run *Run, pods *podTracker, n int, t0 time.Time, what string, succeeded func() time.Time) error {
	err := waitFor(ctx, b.opts.RunTimeout, what, func() (bool, string) {
		if err := pods.Err(); err != nil {
			return false, err.Error()
		}
		return !succeeded().IsZero(), fmt.Sprintf("%d pods exited", countSet(field(pods.Pods(klabels.Everything()), terminated)))
	})
	if err != nil {
		return err
	}
	done := succeeded()
	records := pods.Pods(klabels.Everything())
	if len(records) != n {
		return fmt.Errorf("%d pods instead of %d", len(records), n)
	}
	var lastExit, lastFinished time.Time
	for _, r := range records {
		if r.Terminated.IsZero() || r.ExitCode != 0 {
			return fmt.Errorf("pod %s: not seen exiting 0 before the workload succeeded", r.Name)
		}
		if r.Terminated.After(lastExit) {
			lastExit = r.Terminated
		}
		if r.FinishedAt.After(lastFinished) {
			lastFinished = r.FinishedAt
		}
	}
	run.Seconds[MeasureLastExitToSucceeded] = done.Sub(lastExit).Seconds()
	run.Seconds[MeasureLastExitToSucceededFromFinishedAt] = done.Sub(lastFinished).Seconds()
	run.Seconds[MeasureCreateToSucceeded] = done.Sub(t0).Seconds()
	return nil
}

func (b *Bench) completionAnnotations() map[string]string {
	return map[string]string{cluster.AnnotationRunDuration: b.opts.CompletionRunDuration.String(), cluster.AnnotationExitCode: "0"}
}

// completionCopse: a Training PodCliqueSet whose n pods run briefly and
// exit 0, from create to Succeeded; its API cost is the whole lifecycle's.
func (b *Bench) completionCopse(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioCompletion, System: SystemCopse, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-complete-copse", func(ctx context.Context, ns string) error {
		pods, pcsT, pclqT, err := b.watchCopse(ctx, ns)
		if err != nil {
			return err
		}
		cost, err := b.startOperatorCost(ctx)
		if err != nil {
			return err
		}
		name := b.nextName()
		t0 := time.Now()
		if err := b.env.Client.Create(ctx, trainingPCS(ns, name, int32(n), 0, b.completionAnnotations(), false)); err != nil {
			return fmt.Errorf("create PodCliqueSet: %w", err)
		}
		err = b.completionMeasure(ctx, &run, pods, n, t0, "PodCliqueSet phase Succeeded", func() time.Time {
			r, _ := pcsT.Object(name)
			return r.Phases[string(copsev1alpha1.PodCliqueSetPhaseSucceeded)]
		})
		if err != nil {
			return err
		}
		waitQuiet(ctx, pods, pcsT, pclqT)
		run.StatusWrites, run.Objects = statusWrites(pcsT, pclqT), objectCounts(pcsT, pclqT)
		return cost.finish(ctx, &run, n)
	})
	return b.record(run, err)
}

// completionJobSet: the same JobSet as the restart scenario's, with pods
// that run briefly and exit 0, from create to Completed.
func (b *Bench) completionJobSet(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioCompletion, System: SystemJobSet, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-complete-jobset", func(ctx context.Context, ns string) error {
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		jsT, err := trackObjects(ctx, b.dyn, framework.JobSetGVR, ns)
		if err != nil {
			return err
		}
		name := b.nextName()
		js, err := NewJobSet(ns, name, int32(n), framework.PodSpec(0), b.completionAnnotations(), 0)
		if err != nil {
			return err
		}
		cost, err := b.startJobSetCost()
		if err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := b.dyn.Resource(framework.JobSetGVR).Namespace(ns).Create(ctx, js, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create JobSet: %w", err)
		}
		err = b.completionMeasure(ctx, &run, pods, n, t0, "JobSet condition Completed", func() time.Time {
			r, _ := jsT.Object(name)
			return r.TrueConditions[framework.ConditionJobSetCompleted]
		})
		if err != nil {
			return err
		}
		waitQuiet(ctx, pods, jsT)
		run.StatusWrites = statusWrites(jsT)
		return cost.finish(ctx, &run, n)
	})
	return b.record(run, err)
}

// statusWrites sums the status changes seen per kind. The trackers are
// PodCliqueSet, PodClique or JobSet trackers.
func statusWrites(trackers ...*objTracker) map[string]int {
	out := map[string]int{}
	for _, t := range trackers {
		for _, r := range t.Objects() {
			out[t.kind] += r.StatusWrites
		}
	}
	return out
}

// objectCounts counts the objects the trackers saw, by kind.
func objectCounts(trackers ...*objTracker) map[string]int {
	out := map[string]int{}
	for _, t := range trackers {
		out[t.kind] += len(t.Objects())
	}
	return out
}

func subCounts(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

// record finishes a run: its error, the progress line, the list of runs.
func (b *Bench) record(run Run, err error) Run {
	if err != nil {
		run.Error = err.Error()
	}
	run.WallSeconds = time.Since(run.started).Seconds()
	b.logf("%s", run)
	b.runs = append(b.runs, run)
	return run
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// watchCopse starts the watches every copse run is timed with: its pods,
// PodCliqueSets and PodCliques in the run's namespace.
func (b *Bench) watchCopse(ctx context.Context, ns string) (*podTracker, *objTracker, *objTracker, error) {
	pods, err := trackPods(ctx, b.env.Clientset, ns)
	if err != nil {
		return nil, nil, nil, err
	}
	pcs, err := trackObjects(ctx, b.dyn, pcsGVR, ns)
	if err != nil {
		return nil, nil, nil, err
	}
	pclqs, err := trackObjects(ctx, b.dyn, pclqGVR, ns)
	if err != nil {
		return nil, nil, nil, err
	}
	return pods, pcs, pclqs, nil
}
