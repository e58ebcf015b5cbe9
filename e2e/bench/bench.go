package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

// Scenario names.
const (
	ScenarioCreation   = "creation"
	ScenarioRestart    = "restart"
	ScenarioCompletion = "completion"
	ScenarioContention = "contention"
	// ScenarioRestartInPlace is the restart scenario for a PodCliqueSet
	// restarted in place (trainingSpec.restartStrategy InPlace), against
	// the restart scenario's JobSet (Recreate) and copse's recreation.
	ScenarioRestartInPlace = "restart-inplace"
	// ScenarioTrainJobRestart is the restart scenario for a TrainJob, on
	// its PodCliqueSet backend against its JobSet backend.
	ScenarioTrainJobRestart = "trainjob-restart"
	// ScenarioQueuedStart is the start of TrainJobs queued through Kueue,
	// against the JobSets they become queued through Kueue directly.
	ScenarioQueuedStart = "queued-start"
	// ScenarioScale is `make bench-scale` (RunScale), never part of Run.
	ScenarioScale = "scale"
)

// System names: what a run measured.
const (
	SystemCopse = "copse"
	// SystemAPILimit is the API server's own limit: a client without a
	// client-side rate limit creating copse's pods with bounded
	// parallelism (Run.Parallelism).
	SystemAPILimit = "api-limit"
	// SystemSameQPSClient is a client limited like copse's (its qps/burst).
	SystemSameQPSClient = "same-qps-client"
	SystemJobSet        = "jobset"
	// SystemTrainJobPodCliqueSet and SystemTrainJobJobSet are a TrainJob
	// built into a PodCliqueSet and into a JobSet by copse's TrainJob
	// controller.
	SystemTrainJobPodCliqueSet = "trainjob-podcliqueset"
	SystemTrainJobJobSet       = "trainjob-jobset"
	// SystemIdle is the contention scenario's observer on an idle server.
	SystemIdle = "idle"
	// SystemTrainJobKueue and SystemJobSetKueue are TrainJobs (JobSet
	// backend) queued through Kueue's TrainJob integration, and JobSets
	// queued through its JobSet integration.
	SystemTrainJobKueue = "trainjob-kueue"
	SystemJobSetKueue   = "jobset-kueue"
)

var (
	pcsGVR  = copsev1alpha1.SchemeGroupVersion.WithResource("podcliquesets")
	pclqGVR = copsev1alpha1.SchemeGroupVersion.WithResource("podcliques")
	jobGVR  = batchv1.SchemeGroupVersion.WithResource("jobs")
)

// Options configure a benchmark.
type Options struct {
	// Sizes are the pod counts of the creation scenario.
	Sizes []int
	// Repetitions of every scenario (at least 1; 3 for min/median/max).
	Repetitions int
	// Scenarios to run; empty means all but ScenarioScale.
	Scenarios []string
	// RestartPods and CompletionPods size those scenarios' replica;
	// RestartPods is also the trainjob-restart scenario's node count.
	RestartPods, CompletionPods int
	// QueuedWorkloads and QueuedNodes size the queued-start scenario: that
	// many workloads of that many pods each.
	QueuedWorkloads, QueuedNodes int
	// CompletionRunDuration is how long the completion scenario's pods run.
	CompletionRunDuration time.Duration
	// ReferenceParallelism are the concurrent creators the API-limit
	// client is run with in every repetition; the fastest is the reference.
	ReferenceParallelism []int
	// WithoutSameQPSReference skips the secondary reference, a client
	// limited to copse's qps/burst.
	WithoutSameQPSReference bool
	// ContentionPods is the size of the gang the contention scenario's
	// copse creates while the observer measures; zero means the largest of
	// Sizes.
	ContentionPods int
	// ContentionParallelism is the API-limit client's creators in the
	// contention scenario: enough concurrent requests to exceed the seats of
	// copse's priority level, so that API Priority and Fairness has to
	// queue them.
	ContentionParallelism int
	// ObserverInterval is how often the contention scenario's observer
	// sends a GET and a LIST; ObserverIdle how long it measures the idle
	// server.
	ObserverInterval, ObserverIdle time.Duration
	// WithoutFlowControl installs the chart with flowControl.enabled=false.
	WithoutFlowControl bool
	// RunTimeout bounds one run (one system, one repetition), cleanup
	// included.
	RunTimeout time.Duration
	// KeepCluster keeps the cluster directory (every component's log).
	KeepCluster bool
	// OperatorLogLevel is the operator's log level ("debug", "info",
	// "error"); empty means the chart's.
	OperatorLogLevel string
	// Topology of the cluster's nodes; nil means cluster.DefaultTopology().
	Topology *cluster.Topology
	// Progress receives progress lines; nil means os.Stderr.
	Progress io.Writer
}

func (o *Options) setDefaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 512, 1024, 4096}
	}
	if o.Repetitions < 1 {
		o.Repetitions = 3
	}
	if len(o.Scenarios) == 0 {
		o.Scenarios = []string{ScenarioCreation, ScenarioRestart, ScenarioRestartInPlace, ScenarioCompletion, ScenarioContention, ScenarioTrainJobRestart, ScenarioQueuedStart}
	}
	if o.RestartPods == 0 {
		o.RestartPods = 64
	}
	if o.CompletionPods == 0 {
		o.CompletionPods = 64
	}
	if o.QueuedWorkloads == 0 {
		o.QueuedWorkloads = 32
	}
	if o.QueuedNodes == 0 {
		o.QueuedNodes = 4
	}
	if o.CompletionRunDuration == 0 {
		o.CompletionRunDuration = 3 * time.Second
	}
	if len(o.ReferenceParallelism) == 0 {
		o.ReferenceParallelism = []int{16, 32, 64}
	}
	if o.ContentionPods == 0 {
		o.ContentionPods = slices.Max(o.Sizes)
	}
	if o.ContentionParallelism == 0 {
		o.ContentionParallelism = 256
	}
	if o.ObserverInterval == 0 {
		o.ObserverInterval = 50 * time.Millisecond
	}
	if o.ObserverIdle == 0 {
		o.ObserverIdle = 10 * time.Second
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = 4 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
}

func (o *Options) has(scenario string) bool {
	for _, s := range o.Scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}

// Bench is one benchmark: a cluster, the operator and, for the restart,
// completion and queued-start scenarios, the JobSet controller, and for the
// last one Kueue.
type Bench struct {
	opts    Options
	env     *framework.Env
	dyn     dynamic.Interface
	qps     float32
	burst   int
	started time.Time
	meta    Meta
	// operatorKubeconfig authenticates as the chart's ServiceAccount, the
	// identity copse runs with; the reference clients use it too.
	operatorKubeconfig string

	// referencePod is a pod copse created for a creation run; the reference
	// clients create copies of it.
	referencePod *corev1.Pod
	// observer is the contention scenario's other client, set up on first
	// use.
	observer *observer
	// startupPeakRSS is the operator's VmHWM before the first run reset it.
	startupPeakRSS int64
	runs           []Run
	namespaces     map[string]string
	seq            int
}

// Start brings up the cluster, the chart (local mode) and the operator as
// its ServiceAccount with its configuration (see startOperator) and, if
// needed, the JobSet controller with the operator's client QPS and burst.
func Start(ctx context.Context, opts Options) (*Bench, error) {
	opts.setDefaults()
	b := &Bench{opts: opts, started: time.Now()}
	b.meta = machineMeta()
	b.logf("starting the local cluster")
	c, err := cluster.Start(ctx, cluster.Options{Out: opts.Progress, KeepDir: opts.KeepCluster, Topology: opts.Topology})
	if err != nil {
		return nil, err
	}
	b.env = &framework.Env{Cluster: c, Clientset: c.Client(), Topology: c.Topology()}
	started := false
	defer func() {
		if !started {
			_ = b.Stop()
		}
	}()
	if b.env.Client, err = client.New(c.RESTConfig(), client.Options{Scheme: framework.Scheme()}); err != nil {
		return nil, err
	}
	if b.dyn, err = dynamic.NewForConfig(c.RESTConfig()); err != nil {
		return nil, err
	}
	// Every CRD goes in first: the garbage collector learns new kinds only
	// every 30 seconds (see warmUpGarbageCollector), counted from now. Helm
	// leaves the CRDs of its crds/ folder that exist alone; the trainer CRDs
	// it renders as templates are left out of the release
	// (trainJob.installCRDs=false, see startOperator). JobSet's CRD is
	// needed by every scenario: the operator's TrainJob front-end (on, as
	// users install it) does not start without JobSet's API.
	if err := framework.InstallCRDs(ctx, b.env.Client); err != nil {
		return nil, err
	}
	tool, err := framework.InstallJobSetCRD(ctx, b.env.Client, opts.Progress)
	if err != nil {
		return nil, err
	}
	withJobSet := opts.has(ScenarioRestart) || opts.has(ScenarioCompletion) || opts.has(ScenarioTrainJobRestart) || opts.has(ScenarioQueuedStart)
	if withJobSet {
		b.meta.JobSetVersion = tool.Version
	}
	// Kueue itself starts after the other scenarios (see startKueue).
	if opts.has(ScenarioQueuedStart) {
		if _, err := framework.InstallKueueCRDs(ctx, b.env.Client, opts.Progress); err != nil {
			return nil, err
		}
	}
	if err := b.startOperator(ctx); err != nil {
		return nil, err
	}
	b.meta.ClusterDir = c.Dir()
	if withJobSet {
		if err := b.startJobSet(ctx); err != nil {
			return nil, err
		}
	}
	// Room for a restart's old and new pods. The creation scenario's pods
	// are never scheduled (holdGate), so they need none.
	if err := b.ensurePodCapacity(ctx, max(2*max(opts.RestartPods, opts.CompletionPods), opts.QueuedWorkloads*opts.QueuedNodes)); err != nil {
		return nil, err
	}
	// Every scenario but scale deletes workloads between runs.
	if !opts.has(ScenarioScale) {
		if err := b.warmUpGarbageCollector(ctx); err != nil {
			return nil, err
		}
	}
	if stats, err := ReadProcStats(b.env.Operator.PID()); err == nil {
		b.startupPeakRSS = stats.PeakRSSBytes
	}
	started = true
	return b, nil
}

// The release the benchmark installs.
const (
	chartRelease   = "copse"
	chartNamespace = "copse-system"
	// chartWebhookConfiguration is the chart's webhook.configurationName.
	chartWebhookConfiguration = "copse"
	// flowControlName names the chart's PriorityLevelConfiguration and
	// FlowSchema for release "copse".
	flowControlName = "copse-operator"
)

// startOperator installs the chart in local mode, as `make demo` and the
// helm suite do, and runs the copse-operator binary built from the working
// tree with the chart's ServiceAccount identity (so the chart's RBAC and
// FlowSchemas apply to every request) and the chart's configuration, which
// leaves the client rate limit and the concurrency to the operator's
// defaults. Only leader election is turned off, so that Lease renewals do
// not count as its writes, and the log level follows the options.
func (b *Bench) startOperator(ctx context.Context) error {
	b.logf("installing the chart in local mode (flowControl.enabled=%t)", !b.opts.WithoutFlowControl)
	helm, err := framework.NewHelm(ctx, b.env.Cluster.Kubeconfig(), filepath.Join(b.env.Cluster.Dir(), "helm"))
	if err != nil {
		return err
	}
	ports, err := framework.AllocateLocalOperatorPorts()
	if err != nil {
		return err
	}
	if _, err := framework.InstallLocalRelease(ctx, helm, chartRelease, chartNamespace, ports,
		"--set", fmt.Sprintf("flowControl.enabled=%t", !b.opts.WithoutFlowControl),
		// The CRDs are installed before the chart (see New).
		"--set", "trainJob.installCRDs=false"); err != nil {
		return err
	}
	b.logf("starting copse-operator as the chart's ServiceAccount")
	op, err := framework.StartChartOperator(ctx, b.env, framework.ChartOperatorOptions{
		Release: chartRelease, Namespace: chartNamespace, Ports: ports,
		Configure: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.LeaderElection.Enabled = ptr.To(false)
			if b.opts.OperatorLogLevel != "" {
				cfg.Logging.Level = configv1alpha1.LogLevel(b.opts.OperatorLogLevel)
			}
		},
		TokenValidity: 24 * time.Hour,
	})
	if err != nil {
		return err
	}
	b.operatorKubeconfig = op.Kubeconfig
	if _, err := framework.WaitForCABundles(ctx, b.env.Client, chartWebhookConfiguration, 2*time.Minute); err != nil {
		return err
	}
	ns, err := b.namespace(ctx, "bench-admission")
	if err != nil {
		return err
	}
	if err := framework.WaitWebhooksActive(ctx, b.env.Client, ns); err != nil {
		return err
	}
	cfg := op.Config
	b.qps, b.burst = cfg.ClientConnection.QPS, int(cfg.ClientConnection.Burst)
	b.meta.OperatorQPS, b.meta.OperatorBurst = b.qps, b.burst
	b.meta.OperatorConcurrency = fmt.Sprintf("PodCliqueSet %d, PodClique %d, PodCliqueScalingGroup %d",
		cfg.Controllers.PodCliqueSet.ConcurrentSyncs, cfg.Controllers.PodClique.ConcurrentSyncs, cfg.Controllers.PodCliqueScalingGroup.ConcurrentSyncs)
	b.meta.OperatorIdentity = "system:serviceaccount:" + strings.Replace(op.ServiceAccount, "/", ":", 1)
	b.meta.FlowControl = !b.opts.WithoutFlowControl
	return nil
}

// startJobSet runs the JobSet controller, with its webhooks, at the
// operator's client QPS and burst.
func (b *Bench) startJobSet(ctx context.Context) error {
	b.logf("starting the JobSet controller %s with its webhooks (client qps %g, burst %d, as copse's)", b.meta.JobSetVersion, b.qps, b.burst)
	_, err := framework.StartJobSet(ctx, b.env, framework.JobSetOptions{QPS: b.qps, Burst: b.burst, Progress: b.opts.Progress})
	return err
}

// ensurePodCapacity adds simulated nodes (in a new rack) until the nodes
// can hold pods pods.
func (b *Bench) ensurePodCapacity(ctx context.Context, pods int) error {
	nodes, err := b.env.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	capacity := 0
	for _, n := range nodes.Items {
		capacity += int(n.Status.Allocatable.Pods().Value())
	}
	b.meta.Nodes, b.meta.PodCapacity = len(nodes.Items), capacity
	if capacity >= pods {
		return nil
	}
	perNode := b.env.Topology.Shape.Pods
	if perNode == 0 {
		perNode = cluster.DefaultNodeShape().Pods
	}
	missing := (pods - capacity + perNode - 1) / perNode
	b.logf("adding %d nodes for %d pods", missing, pods)
	if _, err := b.env.Cluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 0, Rack: b.env.Topology.RacksPerBlock, Count: missing}); err != nil {
		return err
	}
	b.meta.Nodes += missing
	b.meta.PodCapacity += missing * perNode
	return nil
}

// Stop stops the JobSet controller, the operator, Kueue and the cluster.
func (b *Bench) Stop() error {
	if b.env == nil {
		return nil
	}
	return b.env.Teardown()
}

// checkHealthy reports a crashed component.
func (b *Bench) checkHealthy() error { return b.env.CheckHealthy() }

func (b *Bench) logf(format string, args ...any) {
	fmt.Fprintf(b.opts.Progress, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// inNamespace runs fn in the namespace kept for prefix (one per scenario
// and system, created on first use) with the run's time limit, then deletes
// what the run created and waits until the namespace is empty, so that no
// run's leftovers load the next one. Namespaces are reused because deleting
// one costs the namespace controller a list and a delete for every resource
// type the API server serves, several seconds of its client's rate limit.
func (b *Bench) inNamespace(ctx context.Context, prefix string, fn func(ctx context.Context, ns string) error) error {
	ns, err := b.namespace(ctx, prefix)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, b.opts.RunTimeout)
	err = fn(runCtx, ns)
	cancel() // also stops the run's watches
	// Cleanup has its own time limit, so that a run that timed out is still
	// cleaned up.
	cleanupCtx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if cleanupErr := b.emptyNamespace(cleanupCtx, ns); cleanupErr != nil {
		err = errors.Join(err, cleanupErr)
	}
	if healthErr := b.checkHealthy(); healthErr != nil {
		err = errors.Join(err, healthErr)
	}
	return err
}

// cleanupTimeout bounds emptyNamespace.
const cleanupTimeout = 2 * time.Minute

func (b *Bench) namespace(ctx context.Context, prefix string) (string, error) {
	if ns, ok := b.namespaces[prefix]; ok {
		return ns, nil
	}
	ns, err := framework.CreateNamespace(ctx, b.env.Client, prefix)
	if err != nil {
		return "", err
	}
	if b.namespaces == nil {
		b.namespaces = map[string]string{}
	}
	b.namespaces[prefix] = ns
	return ns, nil
}

// nextName is a fresh workload name. Names are never reused, because the
// operator keys its create/delete expectations by namespace and name.
func (b *Bench) nextName() string {
	b.seq++
	return fmt.Sprintf("job-%d", b.seq)
}

// emptyNamespace deletes the workloads and pods of ns and waits until no
// TrainJob, PodCliqueSet, PodClique, JobSet, Job or pod is left. TrainJobs
// go first, so that their controller does not build again what is deleted
// next. Pods still there after 30 seconds are deleted without grace.
func (b *Bench) emptyNamespace(ctx context.Context, ns string) error {
	background := metav1.DeletePropagationBackground
	deleteOpts := metav1.DeleteOptions{PropagationPolicy: &background}
	resources := []schema.GroupVersionResource{trainJobGVR, pcsGVR, pclqGVR}
	if b.env.JobSet != nil {
		resources = append(resources, framework.JobSetGVR, jobGVR)
	}
	if b.env.Kueue != nil {
		// The garbage collector deletes Kueue's Workloads with their jobs.
		resources = append(resources, workloadGVR)
	}
	workloads := []schema.GroupVersionResource{trainJobGVR, pcsGVR}
	if b.env.JobSet != nil {
		workloads = append(workloads, framework.JobSetGVR)
	}
	for _, gvr := range workloads {
		if err := b.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, deleteOpts, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete %s of %s: %w", gvr.Resource, ns, err)
		}
	}
	pods := b.env.Clientset.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods of %s: %w", ns, err)
	}
	start := time.Now()
	forced := false
	var left string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left = ""
		for _, gvr := range resources {
			list, err := b.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if n := len(list.Items); n > 0 {
				left += fmt.Sprintf(" %d %s", n, gvr.Resource)
			}
		}
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if n := len(list.Items); n > 0 {
			left += fmt.Sprintf(" %d pods", n)
			if !forced && time.Since(start) > 30*time.Second {
				forced = true
				if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
					return false, err
				}
			}
		}
		return left == "", nil
	})
	if err != nil {
		return fmt.Errorf("empty namespace %s: %w (left:%s)", ns, err, left)
	}
	// The garbage collector and the controllers' caches catch up.
	time.Sleep(500 * time.Millisecond)
	return nil
}

// Meta describes the machine and the configuration of a benchmark.
type Meta struct {
	StartedAt           time.Time `json:"startedAt"`
	DurationSeconds     float64   `json:"durationSeconds"`
	Command             string    `json:"command"`
	CPUs                int       `json:"cpus"`
	CPUModel            string    `json:"cpuModel,omitempty"`
	MemoryBytes         int64     `json:"memoryBytes,omitempty"`
	LoadAverageStart    string    `json:"loadAverageStart,omitempty"`
	LoadAverageEnd      string    `json:"loadAverageEnd,omitempty"`
	GoVersion           string    `json:"goVersion"`
	OperatorQPS         float32   `json:"operatorQPS"`
	OperatorBurst       int       `json:"operatorBurst"`
	OperatorConcurrency string    `json:"operatorConcurrentSyncs"`
	OperatorIdentity    string    `json:"operatorIdentity"`
	FlowControl         bool      `json:"flowControl"`
	JobSetVersion       string    `json:"jobsetVersion,omitempty"`
	KueueVersion        string    `json:"kueueVersion,omitempty"`
	Nodes               int       `json:"nodes,omitempty"`
	PodCapacity         int       `json:"podCapacity,omitempty"`
	ClusterDir          string    `json:"clusterDir"`
	Options             struct {
		Sizes                 []int    `json:"sizes"`
		Repetitions           int      `json:"repetitions"`
		RestartPods           int      `json:"restartPods"`
		CompletionPods        int      `json:"completionPods"`
		CompletionRunDuration string   `json:"completionRunDuration"`
		ReferenceParallelism  []int    `json:"referenceParallelism"`
		ContentionPods        int      `json:"contentionPods"`
		ContentionParallelism int      `json:"contentionParallelism"`
		ObserverInterval      string   `json:"observerInterval"`
		QueuedWorkloads       int      `json:"queuedWorkloads,omitempty"`
		QueuedNodes           int      `json:"queuedNodes,omitempty"`
		Scenarios             []string `json:"scenarios"`
	} `json:"options"`
}

func machineMeta() Meta {
	m := Meta{StartedAt: time.Now().UTC(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Command: strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " ")}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				m.MemoryBytes = kb * 1024
				break
			}
		}
	}
	m.LoadAverageStart = loadAverage()
	return m
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return ""
	}
	return strings.Join(fields[:3], " ")
}
