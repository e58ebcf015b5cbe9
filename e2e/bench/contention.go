package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/framework"
)

// The contention scenario asks whether copse's burst starves other clients
// of the API server. An observer, a client of its own identity like another
// controller's, reads a small object (GET) and lists a small collection
// (LIST) every ObserverInterval; its latencies while copse creates a gang of
// ContentionPods pods are compared with its latencies on the idle server,
// measured in the same repetition.

// observerName is the observer's ServiceAccount, Role, RoleBinding and the
// ConfigMap it reads.
const observerName = "observer"

// observer is the contention scenario's other client: a ServiceAccount
// (which API Priority and Fairness classifies with every other
// ServiceAccount, FlowSchema "service-accounts", priority level
// "workload-low") without a client-side rate limit.
type observer struct {
	cs        kubernetes.Interface
	namespace string
}

// ensureObserver creates the observer's namespace, identity and ConfigMap
// on first use.
func (b *Bench) ensureObserver(ctx context.Context) (*observer, error) {
	if b.observer != nil {
		return b.observer, nil
	}
	ns, err := b.namespace(ctx, "bench-observer")
	if err != nil {
		return nil, err
	}
	meta := metav1.ObjectMeta{Namespace: ns, Name: observerName}
	sa := &corev1.ServiceAccount{ObjectMeta: meta}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: observerName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: observerName, Namespace: ns}}}
	probe := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"probe": "a small object"}}
	for _, obj := range []client.Object{sa, role, binding, probe} {
		if err := b.env.Client.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("set up the observer: create %T: %w", obj, err)
		}
	}
	kubeconfig := filepath.Join(b.env.Cluster.Dir(), "observer", "kubeconfig")
	if err := framework.WriteServiceAccountKubeconfig(ctx, b.env, ns, observerName, kubeconfig, 24*time.Hour); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // no client-side limit: the latencies are the server's
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b.observer = &observer{cs: cs, namespace: ns}
	return b.observer, nil
}

// observation is the observer's latencies of one phase.
type observation struct {
	gets, lists []time.Duration
	errors      int
}

// observe sends a GET of the ConfigMap and a LIST of the namespace's
// ConfigMaps every interval until ctx ends. Each tick's requests run in
// goroutines of their own, so that a slow answer never delays the next
// tick (which would hide the very delays being measured).
func (o *observer) observe(ctx context.Context, interval time.Duration) observation {
	var (
		mu  sync.Mutex
		obs observation
		wg  sync.WaitGroup
	)
	record := func(list bool, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			obs.errors++
		case list:
			obs.lists = append(obs.lists, d)
		default:
			obs.gets = append(obs.gets, d)
		}
	}
	// The requests get their own context: one cut short by the end of the
	// phase would count as an error.
	reqCtx := context.WithoutCancel(ctx)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return obs
		case <-ticker.C:
		}
		wg.Go(func() {
			start := time.Now()
			_, err := o.cs.CoreV1().ConfigMaps(o.namespace).Get(reqCtx, observerName, metav1.GetOptions{})
			record(false, time.Since(start), err)
		})
		wg.Go(func() {
			start := time.Now()
			_, err := o.cs.CoreV1().ConfigMaps(o.namespace).List(reqCtx, metav1.ListOptions{})
			record(true, time.Since(start), err)
		})
	}
}

// ObserverLatency summarises one phase of the observer, in seconds.
type ObserverLatency struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	GetP50   float64 `json:"getP50"`
	GetP99   float64 `json:"getP99"`
	GetMax   float64 `json:"getMax"`
	ListP50  float64 `json:"listP50"`
	ListP99  float64 `json:"listP99"`
	ListMax  float64 `json:"listMax"`
}

func (o observation) summary() *ObserverLatency {
	return &ObserverLatency{
		Requests: len(o.gets) + len(o.lists) + o.errors, Errors: o.errors,
		GetP50: quantile(o.gets, 0.5), GetP99: quantile(o.gets, 0.99), GetMax: quantile(o.gets, 1),
		ListP50: quantile(o.lists, 0.5), ListP99: quantile(o.lists, 0.99), ListMax: quantile(o.lists, 1),
	}
}

// quantile is the q-quantile of ds in seconds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(q*float64(len(sorted))+0.999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return sorted[rank].Seconds()
}

// contentionIdle measures the observer on the idle server for ObserverIdle.
func (b *Bench) contentionIdle(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioContention, System: SystemIdle, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	o, err := b.ensureObserver(ctx)
	if err == nil {
		phase, cancel := context.WithTimeout(ctx, b.opts.ObserverIdle)
		run.Latency = o.observe(phase, b.opts.ObserverInterval).summary()
		cancel()
		err = b.checkHealthy()
	}
	return b.record(run, err)
}

// contentionCopse measures the observer while copse creates a Training
// PodCliqueSet of n gated pods.
func (b *Bench) contentionCopse(ctx context.Context, rep, n int) Run {
	return b.contention(ctx, rep, n, SystemCopse, 0, func(ctx context.Context, ns string) error {
		if err := b.env.Client.Create(ctx, trainingPCS(ns, b.nextName(), int32(n), 0, nil, true)); err != nil {
			return fmt.Errorf("create PodCliqueSet: %w", err)
		}
		return nil
	})
}

// contentionAPILimit measures the observer while the API-limit client
// (copse's identity, so copse's FlowSchema and priority level, and no
// client-side limit) creates n copies of copse's pod with
// ContentionParallelism creators: a burst as copse could make without its
// client-side rate limit (up to 64 creates in flight in each of its
// PodClique workers), which API Priority and Fairness alone then holds
// back.
func (b *Bench) contentionAPILimit(ctx context.Context, rep, n int) Run {
	parallelism := b.opts.ContentionParallelism
	return b.contention(ctx, rep, n, SystemAPILimit, parallelism, func(ctx context.Context, ns string) error {
		if b.referencePod == nil {
			return fmt.Errorf("no copse pod was captured to copy (the copse runs failed)")
		}
		cs, err := b.referenceClient(true)
		if err != nil {
			return err
		}
		objs := make([]*corev1.Pod, n)
		for i := range objs {
			objs[i] = referencePod(b.referencePod, ns, i)
		}
		return createPods(ctx, cs, objs, parallelism)
	})
}

// contention measures the observer from just before burst starts creating
// n pods in the run's namespace to the n-th pod seen, and what API Priority
// and Fairness did meanwhile.
func (b *Bench) contention(ctx context.Context, rep, n int, system string, parallelism int, burst func(ctx context.Context, ns string) error) Run {
	run := Run{Scenario: ScenarioContention, System: system, Size: n, Parallelism: parallelism, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-contention-"+system, func(ctx context.Context, ns string) error {
		o, err := b.ensureObserver(ctx)
		if err != nil {
			return err
		}
		pods, err := trackPods(ctx, b.env.Clientset, ns)
		if err != nil {
			return err
		}
		before, err := framework.ScrapeAPIServerMetrics(ctx, b.env.Clientset)
		if err != nil {
			return err
		}
		phase, stop := context.WithCancel(ctx)
		defer stop()
		observed := make(chan observation, 1)
		go func() { observed <- o.observe(phase, b.opts.ObserverInterval) }()
		t0 := time.Now()
		err = burst(ctx, ns)
		if err == nil {
			err = waitPods(ctx, b.opts.RunTimeout, pods, klabels.Everything(), n, "created", added)
		}
		stop()
		run.Latency = (<-observed).summary()
		if err != nil {
			return err
		}
		run.Seconds[MeasureAllPodsCreated] = nthTime(field(pods.Pods(klabels.Everything()), added), n).Sub(t0).Seconds()
		after, err := framework.ScrapeAPIServerMetrics(ctx, b.env.Clientset)
		if err != nil {
			return err
		}
		run.FlowControl = flowControlCost(before, after)
		if b.referencePod == nil && system == SystemCopse {
			return b.captureReferencePod(ctx, ns)
		}
		return nil
	})
	return b.record(run, err)
}

// PriorityLevelCost is what API Priority and Fairness did with one priority
// level's requests during a run.
type PriorityLevelCost struct {
	// Dispatched requests, Rejected ones (429), and the seconds they waited
	// in its queues in all (WaitSeconds) and on average.
	Dispatched      float64 `json:"dispatched"`
	Rejected        float64 `json:"rejected"`
	WaitSeconds     float64 `json:"waitSeconds"`
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
}

// flowControlCost is the difference of two scrapes of the API server's
// metrics, by priority level.
func flowControlCost(before, after framework.Metrics) map[string]PriorityLevelCost {
	const (
		dispatched = "apiserver_flowcontrol_dispatched_requests_total"
		rejected   = "apiserver_flowcontrol_rejected_requests_total"
		wait       = "apiserver_flowcontrol_request_wait_duration_seconds"
	)
	out := map[string]PriorityLevelCost{}
	d := subtract(after.SumBy(dispatched, nil, "priority_level"), before.SumBy(dispatched, nil, "priority_level"))
	r := subtract(after.SumBy(rejected, nil, "priority_level"), before.SumBy(rejected, nil, "priority_level"))
	for level := range d {
		match := map[string]string{"priority_level": level}
		waited := after.HistogramSum(wait, match) - before.HistogramSum(wait, match)
		waits := after.Sum(wait, match) - before.Sum(wait, match)
		c := PriorityLevelCost{Dispatched: d[level], Rejected: r[level], WaitSeconds: waited}
		if waits > 0 {
			c.MeanWaitSeconds = waited / waits
		}
		out[level] = c
	}
	for level, v := range r {
		if _, ok := out[level]; !ok {
			out[level] = PriorityLevelCost{Rejected: v}
		}
	}
	return out
}
