package metrics

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

var (
	podCliqueSetsDesc = prometheus.NewDesc("copse_podcliquesets",
		"PodCliqueSets by namespace, workload type and status.phase (\"\" before the first status write).",
		[]string{"namespace", "workload_type", "phase"}, nil)
	gangsUnschedulableDesc = prometheus.NewDesc("copse_podcliquesets_unschedulable",
		"PodCliqueSets whose PodGangsScheduled condition is False, by namespace and reason "+
			"(Unschedulable: the kube-scheduler cannot place a gang; GangPlacedIncomplete).",
		[]string{"namespace", "reason"}, nil)
	creationBlockedDesc = prometheus.NewDesc("copse_podcliques_creation_blocked",
		"PodCliques whose PodCreationBlocked condition is True, by namespace and reason (Suspended, NotAdmitted, ReplicaRecreating, "+
			"WaitingForResourceClaims, WaitingForBaseGang, ...: see docs/podclique.md).",
		[]string{"namespace", "reason"}, nil)
	creationRefusedDesc = prometheus.NewDesc("copse_podcliques_creation_refused",
		"PodCliques whose last attempt to create a pod was refused by the API server (PodCreationRefused condition True: "+
			"a ResourceQuota, an admission webhook, a LimitRange), by namespace.",
		[]string{"namespace"}, nil)
	gpusBoundDesc = prometheus.NewDesc("copse_gpus_bound",
		"nvidia.com/gpu requested by copse's pods that are bound to a node and have not ended (terminating ones included), "+
			"by namespace, the phase of their PodCliqueSet, and whether it is suspended: GPUs held by workloads that are not running "+
			"(phase Pending, Succeeded, Failed, or suspended) are GPUs lost.",
		[]string{"namespace", "phase", "suspended"}, nil)
	startupBlockedDesc = prometheus.NewDesc("copse_podcliques_startup_blocked",
		"PodCliques whose StartupBlocked condition is True, by namespace and reason "+
			"(WaitingForReady, WaitingForSucceeded, WaitingForPreviousAttempt).",
		[]string{"namespace", "reason"}, nil)
)

// stateTimeout bounds one scrape's reads of the cache.
const stateTimeout = 5 * time.Second

// readOnly lists the cache's own objects rather than copies: the collector
// only reads them, and a scrape of a large cluster (10,000 pods) would
// otherwise copy every pod each time.
var readOnly = client.UnsafeDisableDeepCopy

// StateCollector reports the state gauges from the manager's cache at each
// scrape.
type StateCollector struct {
	Reader client.Reader
	// TrainJobs: the TrainJob controller runs, so TrainJobs and their
	// runtimes are served and cached (copse_trainjobs).
	TrainJobs bool

	gpus gpuRequests
}

// gpuRequests keeps each pod's GPU request by UID from one scrape to the
// next: a pod's extended-resource requests never change (an in-place
// resize changes CPU and memory only), and adding up every container's
// requests of 10,000 pods at every scrape was most of a scrape's CPU.
type gpuRequests struct {
	mu    sync.Mutex
	byUID map[types.UID]int64
}

// of returns the GPU request of every pod that holds its node (bound, not
// ended), computing only those not seen at the last scrape; it forgets the
// pods that are no longer listed or no longer hold a node.
func (g *gpuRequests) of(pods []corev1.Pod) map[types.UID]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := make(map[types.UID]int64, len(g.byUID))
	for i := range pods {
		pod := &pods[i]
		if !holdsNode(pod) || pod.UID == "" {
			continue
		}
		gpus, seen := g.byUID[pod.UID]
		if !seen {
			gpus = podstate.GPUsOf(pod)
		}
		next[pod.UID] = gpus
	}
	g.byUID = next
	return next
}

// holdsNode: the pod is bound to a node and has not ended.
func holdsNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Describe sends the gauges' descriptions.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- podCliqueSetsDesc
	ch <- gangsUnschedulableDesc
	ch <- startupBlockedDesc
	ch <- creationBlockedDesc
	ch <- creationRefusedDesc
	ch <- gpusBoundDesc
	ch <- trainJobsDesc
}

// Collect lists PodCliqueSets and PodCliques from the cache and counts them.
// A list that fails leaves its gauges out of this scrape (Prometheus then
// marks them stale) rather than reporting zeros.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	var sets copsev1alpha1.PodCliqueSetList
	setsListed := c.Reader.List(ctx, &sets, readOnly) == nil
	if setsListed {
		for key, n := range countPodCliqueSets(sets.Items) {
			ch <- prometheus.MustNewConstMetric(podCliqueSetsDesc, prometheus.GaugeValue, float64(n), key[0], key[1], key[2])
		}
		for key, n := range countByCondition(conditionsOf(sets.Items, podCliqueSetConditions), copsev1alpha1.ConditionTypePodGangsScheduled, metav1.ConditionFalse) {
			ch <- prometheus.MustNewConstMetric(gangsUnschedulableDesc, prometheus.GaugeValue, float64(n), key[0], key[1])
		}
	}
	var pods corev1.PodList
	if err := c.Reader.List(ctx, &pods, client.HasLabels{labels.PartOfKey}, readOnly); err == nil && setsListed {
		for key, n := range gpusBound(sets.Items, pods.Items, c.gpus.of(pods.Items)) {
			ch <- prometheus.MustNewConstMetric(gpusBoundDesc, prometheus.GaugeValue, n, key[0], key[1], key[2])
		}
	}
	if c.TrainJobs {
		collectTrainJobs(ctx, c.Reader, ch)
	}
	var cliques copsev1alpha1.PodCliqueList
	if err := c.Reader.List(ctx, &cliques, readOnly); err == nil {
		conditions := conditionsOf(cliques.Items, podCliqueConditions)
		for key, n := range countByCondition(conditions, copsev1alpha1.ConditionTypeStartupBlocked, metav1.ConditionTrue) {
			ch <- prometheus.MustNewConstMetric(startupBlockedDesc, prometheus.GaugeValue, float64(n), key[0], key[1])
		}
		for key, n := range countByCondition(conditions, copsev1alpha1.ConditionTypePodCreationBlocked, metav1.ConditionTrue) {
			ch <- prometheus.MustNewConstMetric(creationBlockedDesc, prometheus.GaugeValue, float64(n), key[0], key[1])
		}
		refused := map[string]int{}
		for key, n := range countByCondition(conditions, copsev1alpha1.ConditionTypePodCreationRefused, metav1.ConditionTrue) {
			refused[key[0]] += n
		}
		for namespace, n := range refused {
			ch <- prometheus.MustNewConstMetric(creationRefusedDesc, prometheus.GaugeValue, float64(n), namespace)
		}
	}
}

// countPodCliqueSets counts by namespace, workload type and phase.
func countPodCliqueSets(items []copsev1alpha1.PodCliqueSet) map[[3]string]int {
	out := map[[3]string]int{}
	for i := range items {
		pcs := &items[i]
		out[[3]string{pcs.Namespace, string(pcs.Spec.WorkloadType.OrDefault()), string(pcs.Status.Phase)}]++
	}
	return out
}

// gpusBound sums the GPUs of the pods bound to a node that have not ended,
// by namespace, their PodCliqueSet's phase and whether it is suspended. A
// pod whose PodCliqueSet is gone counts under phase "Deleted". gpus are the
// pods' requests by UID (gpuRequests.of).
func gpusBound(sets []copsev1alpha1.PodCliqueSet, pods []corev1.Pod, gpus map[types.UID]int64) map[[3]string]float64 {
	byName := map[[2]string]*copsev1alpha1.PodCliqueSet{}
	for i := range sets {
		byName[[2]string{sets[i].Namespace, sets[i].Name}] = &sets[i]
	}
	out := map[[3]string]float64{}
	for i := range pods {
		pod := &pods[i]
		if !holdsNode(pod) {
			continue
		}
		requested, known := gpus[pod.UID]
		if !known {
			requested = podstate.GPUsOf(pod)
		}
		if requested == 0 {
			continue
		}
		phase, suspended := "Deleted", false
		if pcs := byName[[2]string{pod.Namespace, pod.Labels[labels.PartOfKey]}]; pcs != nil {
			phase, suspended = string(pcs.Status.Phase), pcs.IsSuspended()
		}
		out[[3]string{pod.Namespace, phase, strconv.FormatBool(suspended)}] += float64(requested)
	}
	return out
}

// namespacedConditions are one object's namespace and status conditions.
type namespacedConditions struct {
	namespace  string
	conditions []metav1.Condition
}

// conditionsOf pairs each object's namespace with its status conditions.
func conditionsOf[T any](items []T, of func(*T) (string, []metav1.Condition)) []namespacedConditions {
	out := make([]namespacedConditions, len(items))
	for i := range items {
		out[i].namespace, out[i].conditions = of(&items[i])
	}
	return out
}

func podCliqueSetConditions(pcs *copsev1alpha1.PodCliqueSet) (string, []metav1.Condition) {
	return pcs.Namespace, pcs.Status.Conditions
}

func podCliqueConditions(pclq *copsev1alpha1.PodClique) (string, []metav1.Condition) {
	return pclq.Namespace, pclq.Status.Conditions
}

// countByCondition counts the objects whose condition of type has status,
// by namespace and the condition's reason.
func countByCondition(objects []namespacedConditions, conditionType string, status metav1.ConditionStatus) map[[2]string]int {
	out := map[[2]string]int{}
	for _, o := range objects {
		if c := meta.FindStatusCondition(o.conditions, conditionType); c != nil && c.Status == status {
			out[[2]string{o.namespace, c.Reason}]++
		}
	}
	return out
}
