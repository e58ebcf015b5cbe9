package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

var _ = Describe("Summaries", Label("bench"), func() {
	It("gives min, median and max, leaving out runs without a value", func() {
		s := Summarize([]float64{3, math.NaN(), 1, 2})
		Expect(s.Min).To(Equal(1.0))
		Expect(s.Median).To(Equal(2.0))
		Expect(s.Max).To(Equal(3.0))
		Expect(s.Samples).To(Equal([]float64{3, 1, 2}))
		Expect(Summarize([]float64{4, 1, 3, 2}).Median).To(Equal(2.5))
		Expect(Summarize([]float64{math.NaN()}).Empty()).To(BeTrue())
	})

	It("pairs ratios by repetition", func() {
		Expect(PairedRatios([]float64{2, math.NaN(), 9}, []float64{1, 5, 3})).To(Equal([]float64{2, 3}))
		Expect(PairedRatios([]float64{1}, []float64{0})).To(BeEmpty())
	})

	It("takes the n-th earliest time that is set", func() {
		t0 := time.Unix(100, 0)
		times := []time.Time{t0.Add(3 * time.Second), {}, t0.Add(time.Second), t0.Add(2 * time.Second)}
		Expect(nthTime(times, 1)).To(Equal(t0.Add(time.Second)))
		Expect(nthTime(times, 3)).To(Equal(t0.Add(3 * time.Second)))
		Expect(nthTime(times, 4).IsZero()).To(BeTrue())
	})
})

var _ = Describe("/proc parsing", Label("bench"), func() {
	It("reads utime + stime after a command name with spaces and parentheses", func() {
		stat := "4242 (copse (op) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 12345 1000000 2000 18446744073709551615"
		ticks, err := parseStatCPUTicks(stat)
		Expect(err).NotTo(HaveOccurred())
		Expect(ticks).To(Equal(uint64(300)))
		_, err = parseStatCPUTicks("1 (x) S 1")
		Expect(err).To(HaveOccurred())
	})

	It("reads VmHWM and VmRSS in bytes", func() {
		hwm, rss, err := parseStatusMemory("Name:\tcopse\nVmPeak:\t 900 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(hwm).To(Equal(int64(50 << 20)))
		Expect(rss).To(Equal(int64(40 << 20)))
		_, _, err = parseStatusMemory("Name:\tkthreadd\n")
		Expect(err).To(HaveOccurred())
	})

	It("reads this process", func() {
		stats, err := ReadProcStats(os.Getpid())
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.PeakRSSBytes).To(BeNumerically(">=", stats.RSSBytes))
		Expect(stats.CPUSeconds).To(BeNumerically(">=", 0))
		Expect(stats.RSSBytes).To(BeNumerically(">", 0))
	})
})

func parse(text string) framework.Metrics {
	GinkgoHelper()
	m, err := framework.ParseMetrics(strings.NewReader(text))
	Expect(err).NotTo(HaveOccurred())
	return m
}

var _ = Describe("Request metrics", Label("bench"), func() {
	const before = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 5
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 2
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 1
rest_client_request_duration_seconds_bucket{host="x",verb="GET",le="0.1"} 3
`
	const after = `rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 30
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 69
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 7
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="DELETE"} 1
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PUT"} 1e+00
`

	It("counts writes and conflicts between two scrapes", func() {
		b, err := operatorRequestCounts(parse(before))
		Expect(err).NotTo(HaveOccurred())
		a, err := operatorRequestCounts(parse(after))
		Expect(err).NotTo(HaveOccurred())
		d := a.Sub(b)
		Expect(d.Writes()).To(Equal(64.0 + 6 + 1 + 1))
		Expect(d.Conflicts()).To(Equal(1.0))
		Expect(d.ByMethod()).To(Equal(map[string]float64{"GET": 20, "POST": 64, "PATCH": 6, "DELETE": 1, "PUT": 1}))
	})

	It("counts each controller's reconciles, time in Reconcile and errors", func() {
		const before = `controller_runtime_reconcile_total{controller="podclique",result="success"} 10
controller_runtime_reconcile_total{controller="podclique",result="requeue"} 2
controller_runtime_reconcile_errors_total{controller="podclique"} 1
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="podclique",le="+Inf"} 12
controller_runtime_reconcile_time_seconds_sum{controller="podclique"} 0.5
controller_runtime_reconcile_time_seconds_count{controller="podclique"} 12
`
		const after = `controller_runtime_reconcile_total{controller="podclique",result="success"} 40
controller_runtime_reconcile_total{controller="podclique",result="requeue"} 4
controller_runtime_reconcile_total{controller="podcliqueset",result="success"} 3
controller_runtime_reconcile_errors_total{controller="podclique"} 1
controller_runtime_reconcile_errors_total{controller="podcliqueset"} 2
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="podclique",le="+Inf"} 44
controller_runtime_reconcile_time_seconds_sum{controller="podclique"} 2.5
controller_runtime_reconcile_time_seconds_count{controller="podclique"} 44
`
		Expect(reconcileCosts(parse(before), parse(after))).To(Equal(map[string]ReconcileCost{
			"podclique":    {Reconciles: 32, Seconds: 2},
			"podcliqueset": {Reconciles: 3},
		}))
		Expect(reconcileErrors(parse(after)) - reconcileErrors(parse(before))).To(Equal(2.0))
	})

	It("refuses metrics without the counter", func() {
		_, err := operatorRequestCounts(parse("up 1\n"))
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("API server metrics", Label("bench"), func() {
	const before = `apiserver_request_total{code="200",component="apiserver",group="grove.io",resource="podcliques",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 10
apiserver_request_total{code="409",component="apiserver",group="grove.io",resource="podcliques",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 100
apiserver_flowcontrol_dispatched_requests_total{flow_schema="copse-operator",priority_level="copse-operator"} 50
apiserver_flowcontrol_dispatched_requests_total{flow_schema="service-accounts",priority_level="workload-low"} 7
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="copse-operator",priority_level="copse-operator",le="+Inf"} 50
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="copse-operator",priority_level="copse-operator"} 1
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="copse-operator",priority_level="copse-operator"} 50
`
	const after = `apiserver_request_total{code="200",component="apiserver",group="grove.io",resource="podcliques",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 30
apiserver_request_total{code="409",component="apiserver",group="grove.io",resource="podcliques",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",group="grove.io",resource="podcliquesets",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 4
apiserver_request_total{code="409",component="apiserver",group="grove.io",resource="podcliques",scope="resource",subresource="",verb="POST",version="v1alpha1"} 1
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 164
apiserver_flowcontrol_dispatched_requests_total{flow_schema="copse-operator",priority_level="copse-operator"} 150
apiserver_flowcontrol_dispatched_requests_total{flow_schema="service-accounts",priority_level="workload-low"} 7
apiserver_flowcontrol_rejected_requests_total{flow_schema="copse-operator",priority_level="copse-operator",reason="queue-full"} 3
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="copse-operator",priority_level="copse-operator",le="+Inf"} 150
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="copse-operator",priority_level="copse-operator"} 6
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="copse-operator",priority_level="copse-operator"} 150
`

	It("counts status writes and conflicts on grove.io objects, and requests by FlowSchema", func() {
		cost := apiServerCost(parse(before), parse(after))
		Expect(cost.Requests).To(Equal(20.0 + 3 + 4 + 1 + 64))
		Expect(cost.StatusWrites).To(Equal(map[string]float64{"podcliques": 23, "podcliquesets": 4}))
		Expect(cost.GroveConflicts).To(Equal(map[string]float64{"podcliques/status": 3, "podcliques": 1}))
		Expect(cost.Conflicts()).To(Equal(4.0))
		Expect(cost.ByFlowSchema).To(Equal(map[string]float64{"copse-operator": 100}))
	})

	It("reports what API Priority and Fairness did per priority level", func() {
		levels := flowControlCost(parse(before), parse(after))
		Expect(levels).To(HaveKeyWithValue("copse-operator", PriorityLevelCost{Dispatched: 100, Rejected: 3, WaitSeconds: 5, MeanWaitSeconds: 0.05}))
		Expect(levels).NotTo(HaveKey("workload-low"), "a level without requests in between")
	})
})

var _ = Describe("What a queued start cost Kueue", Label("bench"), func() {
	It("counts dry-run Workload creates and the time spent on them, not real ones", func() {
		// workloadPOSTs is the API server's metrics for Workload creates:
		// dry-run ones (count, seconds spent) and real ones.
		workloadPOSTs := func(dryRuns int, dryRunSeconds float64, real int) string {
			labels := func(dryRun string) string {
				return `component="apiserver",dry_run="` + dryRun + `",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="",verb="POST",version="v1beta2"`
			}
			var b strings.Builder
			b.WriteString("# TYPE apiserver_request_duration_seconds histogram\n")
			for _, m := range []struct {
				dryRun  string
				count   int
				seconds float64
			}{{"All", dryRuns, dryRunSeconds}, {"", real, 5}} {
				fmt.Fprintf(&b, "apiserver_request_total{code=\"201\",%s} %d\n", labels(m.dryRun), m.count)
				fmt.Fprintf(&b, "apiserver_request_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels(m.dryRun), m.count)
				fmt.Fprintf(&b, "apiserver_request_duration_seconds_sum{%s} %g\n", labels(m.dryRun), m.seconds)
				fmt.Fprintf(&b, "apiserver_request_duration_seconds_count{%s} %d\n", labels(m.dryRun), m.count)
			}
			return b.String()
		}
		before, after := workloadPOSTs(4, 0.1, 2), workloadPOSTs(10, 0.4, 9)
		count, seconds := workloadDryRuns(parse(before), parse(after))
		Expect(count).To(Equal(6.0))
		Expect(seconds).To(BeNumerically("~", 0.3, 1e-9))
	})

	It("counts the versions seen up to a time, that time included", func() {
		t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		objs := []objRecord{{Changes: []time.Time{at(0), at(2), at(5)}}, {Changes: []time.Time{at(1), at(6)}}}
		Expect(changesUntil(objs, at(5))).To(Equal(4))
		Expect(changesUntil(objs, at(-1))).To(BeZero())
		Expect(countAdmitted([]objRecord{
			{TrueConditions: map[string]time.Time{kueue.WorkloadAdmitted: at(1)}},
			{TrueConditions: map[string]time.Time{}},
		})).To(Equal(1))
	})
})

var _ = Describe("Creation growth", Label("bench"), func() {
	It("fits k of time ~ N^k", func() {
		Expect(GrowthExponent([]int{64, 512, 4096}, []float64{0.64, 5.12, 40.96})).To(BeNumerically("~", 1, 1e-9))
		Expect(GrowthExponent([]int{64, 4096}, []float64{1, 64 * 64})).To(BeNumerically("~", 2, 1e-9))
		Expect(GrowthExponent([]int{64, 512, 4096}, []float64{0.5, 0.5, 0.5})).To(BeNumerically("~", 0, 1e-9))
		Expect(math.IsNaN(GrowthExponent([]int{64, 512}, []float64{1, math.NaN()}))).To(BeTrue())
	})
})

var _ = Describe("Observer latencies", Label("bench"), func() {
	It("takes nearest-rank quantiles", func() {
		var ds []time.Duration
		for i := 100; i >= 1; i-- {
			ds = append(ds, time.Duration(i)*time.Millisecond)
		}
		Expect(quantile(ds, 0.5)).To(Equal(0.05))
		Expect(quantile(ds, 0.99)).To(Equal(0.099))
		Expect(quantile(ds, 1)).To(Equal(0.1))
		Expect(quantile(nil, 0.5)).To(BeZero())
		Expect(ds[0]).To(Equal(100*time.Millisecond), "the input is not sorted in place")
	})
})

var _ = Describe("JobSet objects", Label("bench"), func() {
	It("builds one replicated Job of n pods and leaves the rest to JobSet's defaulting webhook", func() {
		js, err := NewJobSet("ns", "job", 64, corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}}, map[string]string{"a": "b"}, 1)
		Expect(err).NotTo(HaveOccurred())
		get := func(fields ...string) any {
			v, found, err := unstructured.NestedFieldNoCopy(js.Object, fields...)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue(), "%v", fields)
			return v
		}
		Expect(js.GetNamespace()).To(Equal("ns"))
		Expect(js.GetName()).To(Equal("job"))
		Expect(get("spec", "failurePolicy", "maxRestarts")).To(Equal(int64(1)))
		Expect(get("spec", "failurePolicy", "restartStrategy")).To(Equal("Recreate"))
		rjobs := get("spec", "replicatedJobs").([]any)
		Expect(rjobs).To(HaveLen(1))
		job := rjobs[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		Expect(job["parallelism"]).To(Equal(int64(64)))
		Expect(job["completions"]).To(Equal(int64(64)))
		Expect(job["backoffLimit"]).To(Equal(int64(0)))
		pod := job["template"].(map[string]any)
		Expect(pod["spec"].(map[string]any)["restartPolicy"]).To(Equal("Never"))
		Expect(pod["metadata"].(map[string]any)["annotations"]).To(Equal(map[string]any{"a": "b"}))
		for _, defaulted := range [][]string{{"spec", "successPolicy"}, {"spec", "startupPolicy"}, {"spec", "network"}} {
			_, found, _ := unstructured.NestedFieldNoCopy(js.Object, defaulted...)
			Expect(found).To(BeFalse(), "%v is the webhook's to default", defaulted)
		}
		Expect(job).NotTo(HaveKey("completionMode"), "the webhook's to default")
	})
})

var _ = Describe("The trainjob-restart scenario's runtime", Label("bench"), func() {
	It("is a torch runtime of n nodes with maxRestarts that copse accepts for either backend", func() {
		for _, backend := range []trainerv1alpha1.RuntimeBackend{trainerv1alpha1.RuntimeBackendJobSet, trainerv1alpha1.RuntimeBackendPodCliqueSet} {
			rt := trainJobRuntime("ns", 64, 1, backend)
			Expect(rt.Spec.Backend).To(Equal(backend))
			Expect(rt.Spec.MLPolicy.Torch).NotTo(BeNil())
			Expect(rt.Spec.MLPolicy.NumNodes).To(HaveValue(BeEquivalentTo(64)))
			Expect(rt.Spec.Template.Spec.FailurePolicy).To(HaveValue(HaveField("MaxRestarts", BeEquivalentTo(1))))
			Expect(trainjob.ValidateRuntime(&rt.Spec)).To(BeEmpty(), "backend %s", backend)
		}
		tj := trainJobOn("ns", "job", 64)
		Expect(tj.Spec.RuntimeRef.Name).To(Equal(trainJobRuntimeName))
		Expect(tj.Spec.Trainer.NumNodes).To(HaveValue(BeEquivalentTo(64)))
	})
})

var _ = Describe("The plain client's pods", Label("bench"), func() {
	It("copy copse's pod with the index changed and the server's additions removed", func() {
		template := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "job-1-0-worker-abcde", GenerateName: "job-1-0-worker-", Namespace: "copse-ns", UID: "u",
				Labels:          map[string]string{labels.PodCliqueKey: "job-1-0-worker", labels.PodIndexKey: "0"},
				OwnerReferences: []metav1.OwnerReference{{Name: "job-1-0-worker"}},
			},
			Spec: corev1.PodSpec{
				Hostname: "job-1-0-worker-0", Priority: ptr.To[int32](0),
				SchedulingGates: []corev1.PodSchedulingGate{{Name: holdGate}},
				Volumes:         []corev1.Volume{{Name: "kube-api-access-xyz"}, {Name: "data"}},
				Tolerations: []corev1.Toleration{
					{Key: "node.kubernetes.io/not-ready", TolerationSeconds: ptr.To[int64](300)},
					{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists},
				},
				Containers: []corev1.Container{{
					Name:         "main",
					Env:          []corev1.EnvVar{{Name: groveconstants.EnvVarPodIndex, Value: "0"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-xyz"}, {Name: "data"}},
				}},
			},
		}
		pod := referencePod(template, "ref-ns", 7)
		Expect(pod.Name).To(BeEmpty())
		Expect(pod.GenerateName).To(Equal("job-1-0-worker-"))
		Expect(pod.Namespace).To(Equal("ref-ns"))
		Expect(pod.OwnerReferences).To(BeEmpty())
		Expect(pod.Labels[labels.PodIndexKey]).To(Equal("7"))
		Expect(pod.Spec.Hostname).To(Equal("job-1-0-worker-7"))
		Expect(pod.Spec.Priority).To(BeNil())
		Expect(pod.Spec.SchedulingGates).To(HaveLen(1))
		Expect(pod.Spec.Volumes).To(Equal([]corev1.Volume{{Name: "data"}}))
		Expect(pod.Spec.Tolerations).To(HaveLen(1))
		Expect(pod.Spec.Containers[0].VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "data"}}))
		Expect(pod.Spec.Containers[0].Env[0].Value).To(Equal("7"))
		Expect(template.Spec.Containers[0].Env[0].Value).To(Equal("0"), "the template is not modified")
		Expect(template.Labels[labels.PodIndexKey]).To(Equal("0"))
	})
})

var _ = Describe("The scale plan", Label("bench"), func() {
	namespaces := []string{"a", "b", "c"}

	It("splits the pods exactly into Training gangs of 64 to 512 and Inference workloads", func() {
		plan, err := planScale(10000, 100, namespaces, 1)
		Expect(err).NotTo(HaveOccurred())
		var training, inference, total int
		var sizes []int
		for i, w := range plan {
			total += w.Pods
			Expect(w.Namespace).To(Equal(namespaces[i%3]), "round robin")
			if w.Training {
				training++
				sizes = append(sizes, w.Pods)
				Expect(w.Pods).To(And(BeNumerically(">=", 64), BeNumerically("<=", 512)), w.Name)
			} else {
				inference++
				Expect(w.Pods).To(Equal(100), w.Name)
			}
		}
		Expect(total).To(Equal(10000))
		Expect(training).To(Equal(100))
		Expect(inference).To(Equal(10))
		Expect(slices.Max(sizes)).To(BeNumerically(">=", 256), "a mix, not all alike: %v", sizes)
		Expect(slices.Min(sizes)).To(Equal(64), "a mix, not all alike: %v", sizes)
	})

	It("is the same for the same seed and differs for another", func() {
		a, _ := planScale(1000, 10, namespaces, 7)
		b, _ := planScale(1000, 10, namespaces, 7)
		c, _ := planScale(1000, 10, namespaces, 8)
		Expect(a).To(Equal(b))
		Expect(a).NotTo(Equal(c))
	})

	It("refuses a plan whose gangs cannot fit the pods", func() {
		_, err := planScale(1000, 20, namespaces, 1) // 900 Training pods < 20 x 64
		Expect(err).To(MatchError(ContainSubstring("do not fit")))
		_, err = planScale(100000, 10, namespaces, 1) // 90000 > 10 x 512
		Expect(err).To(HaveOccurred())
	})

	It("lays out at least the asked-for nodes in racks of ten", func() {
		for nodes, want := range map[int]int{1000: 1000, 100: 100, 16: 20, 5: 5} {
			Expect(len(ScaleTopology(nodes).Placements())).To(Equal(want), "%d nodes", nodes)
		}
	})

	It("finds the largest binding spread of one gang", func() {
		t0 := time.Unix(100, 0)
		rec := func(ns, clique string, at time.Duration) podRecord {
			return podRecord{Namespace: ns, Labels: map[string]string{podCliqueLabel: clique}, Scheduled: t0.Add(at)}
		}
		Expect(largestGangSpread([]podRecord{
			rec("a", "x", 0), rec("a", "x", 2*time.Second), rec("b", "x", 5*time.Second), rec("a", "y", time.Second),
			{Namespace: "a", Labels: map[string]string{podCliqueLabel: "x"}}, // never bound
		})).To(Equal(2 * time.Second))
	})
})

var _ = Describe("The queued-start scenario's queue", Label("bench"), func() {
	It("has quota for exactly every pod of a run", func() {
		spec := framework.PodSpec(0)
		askQueuedCPU(&spec)
		perPod := spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		Expect(perPod.MilliValue()).To(BeNumerically(">", 0), "Kueue counts nothing against a quota for a pod that asks for nothing")
		quota := queuedQuota(8, 4)
		Expect(quota.MilliValue()).To(Equal(32 * perPod.MilliValue()))
	})
})
