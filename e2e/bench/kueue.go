package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
)

// The queued-start scenario's queue: a ClusterQueue with quota for every
// workload of a run at once, and a LocalQueue of the same name in each of
// the scenario's two namespaces.
const (
	benchQueue = "bench"
	// queuedPodCPU is what each pod of the scenario asks for, so that Kueue
	// counts it against the quota.
	queuedPodCPU = "100m"
	// Namespaces (prefixes) of the scenario's two systems.
	queuedTrainJobPrefix = "bench-queued-trainjob"
	queuedJobSetPrefix   = "bench-queued-jobset"
)

var workloadGVR = kueue.SchemeGroupVersion.WithResource("workloads")

// askQueuedCPU makes the pod of a queued workload ask for queuedPodCPU.
func askQueuedCPU(spec *corev1.PodSpec) {
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(queuedPodCPU)}
}

// queuedQuota is the ClusterQueue's cpu quota: exactly what workloads
// workloads of nodes pods ask for together.
func queuedQuota(workloads, nodes int) resource.Quantity {
	perPod := resource.MustParse(queuedPodCPU)
	return *resource.NewMilliQuantity(perPod.MilliValue()*int64(workloads*nodes), resource.DecimalSI)
}

// startKueue runs Kueue at copse's client QPS and burst, as the JobSet
// controller is run, with the scenario's queue. Kueue runs for this
// scenario only, after the others: its webhooks, which every Job, JobSet and
// TrainJob of the cluster goes through, would add a call to the other
// scenarios' JobSets and TrainJobs.
func (b *Bench) startKueue(ctx context.Context) error {
	b.logf("starting Kueue with its webhooks (client qps %g, burst %d, as copse's)", b.qps, b.burst)
	k, err := framework.StartKueue(ctx, b.env, framework.KueueOptions{QPS: b.qps, Burst: int32(b.burst), Progress: b.opts.Progress})
	if err != nil {
		return err
	}
	b.meta.KueueVersion = k.Version
	queues := framework.KueueQueues{
		ClusterQueue: benchQueue,
		Flavor:       framework.KueueFlavor{Name: benchQueue},
		Quota:        corev1.ResourceList{corev1.ResourceCPU: queuedQuota(b.opts.QueuedWorkloads, b.opts.QueuedNodes)},
	}
	for _, prefix := range []string{queuedTrainJobPrefix, queuedJobSetPrefix} {
		ns, err := b.namespace(ctx, prefix)
		if err != nil {
			return err
		}
		queues.Namespaces = append(queues.Namespaces, ns)
	}
	return framework.CreateKueueQueues(ctx, b.env.Client, queues)
}

// runQueuedStart runs the queued-start scenario's repetitions, each a pair
// of runs in alternating order, as Run does for the other scenarios. If
// Kueue does not start, both systems' runs are recorded with that error.
func (b *Bench) runQueuedStart(ctx context.Context, pair func(rep int, copse, reference func())) {
	n := b.opts.QueuedWorkloads
	if err := b.startKueue(ctx); err != nil {
		for _, system := range []string{SystemTrainJobKueue, SystemJobSetKueue} {
			b.record(Run{Scenario: ScenarioQueuedStart, System: system, Size: n, Repetition: 1, Seconds: map[string]float64{}, started: time.Now()},
				fmt.Errorf("start Kueue: %w", err))
		}
		return
	}
	for rep := 1; rep <= b.opts.Repetitions && ctx.Err() == nil; rep++ {
		b.logf("queued start, repetition %d of %d", rep, b.opts.Repetitions)
		pair(rep, func() { b.queuedStart(ctx, rep, SystemTrainJobKueue) }, func() { b.queuedStart(ctx, rep, SystemJobSetKueue) })
	}
}

// queuedStart submits QueuedWorkloads workloads of QueuedNodes pods each to
// the Kueue queue, one after the other, and times them from just before the
// first create to every Workload admitted and to every pod Running: TrainJobs
// on the JobSet backend through Kueue's TrainJob integration
// (SystemTrainJobKueue), or the JobSets they would become, submitted
// directly through Kueue's JobSet integration (SystemJobSetKueue).
func (b *Bench) queuedStart(ctx context.Context, rep int, system string) Run {
	n, nodes := b.opts.QueuedWorkloads, b.opts.QueuedNodes
	run := Run{Scenario: ScenarioQueuedStart, System: system, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	prefix := queuedJobSetPrefix
	if system == SystemTrainJobKueue {
		prefix = queuedTrainJobPrefix
	}
	err := b.inNamespace(ctx, prefix, func(ctx context.Context, ns string) error {
		if err := b.waitQueueIdle(ctx); err != nil {
			return err
		}
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		workloads, err := trackObjects(ctx, b.dyn, workloadGVR, ns)
		if err != nil {
			return err
		}
		jobs, err := b.trackQueuedJobs(ctx, ns, system)
		if err != nil {
			return err
		}
		create, err := b.queuedCreator(ctx, ns, system, nodes)
		if err != nil {
			return err
		}
		apiBefore, err := framework.ScrapeAPIServerMetrics(ctx, b.env.Clientset)
		if err != nil {
			return err
		}
		t0 := time.Now()
		for range n {
			if err := create(ctx, b.nextName()); err != nil {
				return err
			}
		}
		run.Seconds[MeasureAllCreated] = time.Since(t0).Seconds()
		if err := waitFor(ctx, b.opts.RunTimeout, fmt.Sprintf("%d Workloads admitted", n), func() (bool, string) {
			admitted := countAdmitted(workloads.Objects())
			return admitted >= n, fmt.Sprintf("%d admitted", admitted)
		}); err != nil {
			return err
		}
		apiAfter, err := framework.ScrapeAPIServerMetrics(ctx, b.env.Clientset)
		if err != nil {
			return err
		}
		if err := waitPods(ctx, b.opts.RunTimeout, pods, klabels.Everything(), n*nodes, "Running", running); err != nil {
			return err
		}
		run.Seconds[MeasureAllPodsRunning] = nthTime(field(pods.Pods(klabels.Everything()), running), n*nodes).Sub(t0).Seconds()
		// One Workload per workload: Kueue leaves the JobSets of queued
		// TrainJobs to their TrainJobs' Workloads.
		seen := workloads.Objects()
		if len(seen) != n {
			return fmt.Errorf("Kueue made %d Workloads for %d %s", len(seen), n, system)
		}
		var made, admitted []time.Time
		for _, w := range seen {
			made = append(made, w.Added)
			admitted = append(admitted, w.TrueConditions[kueue.WorkloadAdmitted])
		}
		lastMade := nthTime(made, n)
		if !lastMade.IsZero() {
			run.Seconds[MeasureAllWorkloadsSeen] = lastMade.Sub(t0).Seconds()
		}
		if at := nthTime(admitted, n); !at.IsZero() {
			run.Seconds[MeasureAllAdmitted] = at.Sub(t0).Seconds()
		}
		run.Queue = &QueueCost{JobChanges: map[string]int{}}
		for _, tracker := range jobs {
			run.Queue.JobChanges[tracker.kind] = changesUntil(tracker.Objects(), lastMade)
		}
		run.Queue.WorkloadDryRuns, run.Queue.WorkloadDryRunSeconds = workloadDryRuns(apiBefore, apiAfter)
		return nil
	})
	return b.record(run, err)
}

// trackQueuedJobs starts recording what Kueue's job integration for system
// reconciles on: the TrainJobs and the JobSets they own, or the JobSets.
func (b *Bench) trackQueuedJobs(ctx context.Context, ns, system string) ([]*objTracker, error) {
	gvrs := []schema.GroupVersionResource{framework.JobSetGVR}
	if system == SystemTrainJobKueue {
		gvrs = append(gvrs, trainJobGVR)
	}
	var out []*objTracker
	for _, gvr := range gvrs {
		t, err := trackObjects(ctx, b.dyn, gvr, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// countAdmitted counts the Workloads seen admitted.
func countAdmitted(workloads []objRecord) int {
	n := 0
	for _, w := range workloads {
		if !w.TrueConditions[kueue.WorkloadAdmitted].IsZero() {
			n++
		}
	}
	return n
}

// changesUntil counts the versions of objs seen up to and including at.
func changesUntil(objs []objRecord, at time.Time) int {
	n := 0
	for _, o := range objs {
		for _, seen := range o.Changes {
			if !seen.After(at) {
				n++
			}
		}
	}
	return n
}

// queuedCreator returns what creates one workload of system in ns, in the
// queue: a TrainJob on a TrainingRuntime of nodes torch nodes (created
// here, once per namespace), or a JobSet of one replicated Job of nodes
// pods, the shape of that TrainJob's JobSet.
func (b *Bench) queuedCreator(ctx context.Context, ns, system string, nodes int) (func(ctx context.Context, name string) error, error) {
	queueLabel := map[string]string{copsekueue.QueueNameLabel: benchQueue}
	if system == SystemTrainJobKueue {
		rt := trainJobRuntime(ns, int32(nodes), 0, trainerv1alpha1.RuntimeBackendJobSet)
		askQueuedCPU(&rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec)
		if err := b.env.Client.Create(ctx, rt); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create TrainingRuntime: %w", err)
		}
		if err := waitRuntimeAdmitted(ctx, b.env.Client, trainJobOn(ns, "runtime-probe", int32(nodes)), queueLabel); err != nil {
			return nil, err
		}
		return func(ctx context.Context, name string) error {
			tj := trainJobOn(ns, name, int32(nodes))
			tj.Labels = queueLabel
			if err := b.env.Client.Create(ctx, tj); err != nil {
				return fmt.Errorf("create TrainJob: %w", err)
			}
			return nil
		}, nil
	}
	return func(ctx context.Context, name string) error {
		spec := framework.PodSpec(0)
		askQueuedCPU(&spec)
		js, err := NewJobSet(ns, name, int32(nodes), spec, nil, 0)
		if err != nil {
			return err
		}
		js.SetLabels(queueLabel)
		if _, err := b.dyn.Resource(framework.JobSetGVR).Namespace(ns).Create(ctx, js, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create JobSet: %w", err)
		}
		return nil
	}, nil
}

// waitQueueIdle waits until Kueue counts no workload in the ClusterQueue,
// so that a run finds all of its quota free: the previous run's Workloads
// are gone (emptyNamespace), but Kueue releases their quota as it sees them
// go.
func (b *Bench) waitQueueIdle(ctx context.Context) error {
	return waitFor(ctx, cleanupTimeout, "ClusterQueue "+benchQueue+" without workloads", func() (bool, string) {
		cq := &kueue.ClusterQueue{}
		if err := b.env.Client.Get(ctx, client.ObjectKey{Name: benchQueue}, cq); err != nil {
			return false, err.Error()
		}
		s := cq.Status
		return s.PendingWorkloads == 0 && s.ReservingWorkloads == 0 && s.AdmittedWorkloads == 0,
			fmt.Sprintf("pending %d, reserving %d, admitted %d", s.PendingWorkloads, s.ReservingWorkloads, s.AdmittedWorkloads)
	})
}

// runtimeAdmittedTimeout bounds waitRuntimeAdmitted.
const runtimeAdmittedTimeout = 30 * time.Second

// waitRuntimeAdmitted waits, before the clock starts, until the admission
// webhooks take a TrainJob on the runtime just created: Kueue's TrainJob
// webhook looks the runtime up in its own cache, and refuses a TrainJob
// whose runtime it has not seen yet ("runtime ... not found"). It asks with a
// dry run, which runs every webhook and creates nothing.
func waitRuntimeAdmitted(ctx context.Context, c client.Client, probe *trainerv1alpha1.TrainJob, queueLabel map[string]string) error {
	probe.Labels = queueLabel
	deadline := time.Now().Add(runtimeAdmittedTimeout)
	for {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a TrainJob on runtime %s is still refused after %s: %w", probe.Spec.RuntimeRef.Name, runtimeAdmittedTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
