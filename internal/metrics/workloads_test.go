package metrics

import (
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// collected renders what c reports as "name{label=value,...} value" lines.
func collected(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	var out []string
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, l := range pb.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		name := m.Desc().String()
		name = name[strings.Index(name, `fqName: "`)+9:]
		name = name[:strings.Index(name, `"`)]
		out = append(out, name+"{"+strings.Join(labels, ",")+"} "+strings.TrimSpace(pb.GetGauge().String()))
	}
	sort.Strings(out)
	return out
}

func TestStateCollector(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := copsev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	training := func(ns, name string, phase copsev1alpha1.PodCliqueSetPhase, conditions ...metav1.Condition) *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Status.Phase = phase
		pcs.Status.Conditions = conditions
		return pcs
	}
	unschedulable := metav1.Condition{Type: copsev1alpha1.ConditionTypePodGangsScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable"}
	placed := metav1.Condition{Type: copsev1alpha1.ConditionTypePodGangsScheduled, Status: metav1.ConditionTrue, Reason: "AllGangsScheduled"}
	blocked := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "job-0-w"}}
	blocked.Status.Conditions = []metav1.Condition{
		{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonWaitingForPreviousAttempt},
		{Type: copsev1alpha1.ConditionTypePodCreationBlocked, Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonCreationAllowed},
	}
	refused := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one-0-w"}}
	refused.Status.Conditions = []metav1.Condition{
		{Type: copsev1alpha1.ConditionTypePodCreationRefused, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonCreationRefused},
		{Type: copsev1alpha1.ConditionTypePodCreationBlocked, Status: metav1.ConditionTrue, Reason: "Suspended"},
	}
	pod := func(ns, name, pcs, node string, gpus int64, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labels.PartOfKey: pcs}}}
		p.Spec.NodeName = node
		// The API server defaults an extended resource's request to its limit.
		gpu := corev1.ResourceList{mnnvl.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
		p.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}}
		p.Status.Phase = phase
		return p
	}
	suspended := training("b", "five", copsev1alpha1.PodCliqueSetPhaseRunning)
	suspended.Spec.Suspend = ptr.To(true)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("a", "bound-pending", "one", "n1", 4, corev1.PodRunning),
		pod("a", "bound-pending-2", "two", "n2", 2, corev1.PodPending),
		pod("a", "unbound", "two", "", 8, corev1.PodPending),
		pod("a", "running", "three", "n3", 1, corev1.PodRunning),
		pod("b", "ended", "four", "n4", 8, corev1.PodSucceeded),
		pod("b", "suspended-terminating", "five", "n5", 8, corev1.PodRunning),
		pod("b", "orphan", "gone", "n6", 1, corev1.PodRunning),
		pod("b", "no-gpu", "five", "n5", 0, corev1.PodRunning),
		suspended,
		training("a", "one", copsev1alpha1.PodCliqueSetPhasePending, unschedulable),
		training("a", "two", copsev1alpha1.PodCliqueSetPhasePending, unschedulable),
		training("a", "three", copsev1alpha1.PodCliqueSetPhaseRunning, placed),
		training("b", "four", copsev1alpha1.PodCliqueSetPhaseSucceeded),
		blocked, refused,
	).Build()

	got := strings.Join(collected(t, &StateCollector{Reader: reader}), "\n")
	want := strings.Join([]string{
		`copse_gpus_bound{namespace=a,phase=Pending,suspended=false} value:6`,
		`copse_gpus_bound{namespace=a,phase=Running,suspended=false} value:1`,
		`copse_gpus_bound{namespace=b,phase=Deleted,suspended=false} value:1`,
		`copse_gpus_bound{namespace=b,phase=Running,suspended=true} value:8`,
		`copse_podcliques_creation_blocked{namespace=a,reason=Suspended} value:1`,
		`copse_podcliques_creation_refused{namespace=a} value:1`,
		`copse_podcliques_startup_blocked{namespace=a,reason=WaitingForPreviousAttempt} value:1`,
		`copse_podcliquesets_unschedulable{namespace=a,reason=Unschedulable} value:2`,
		`copse_podcliquesets{namespace=a,phase=Pending,workload_type=Training} value:2`,
		`copse_podcliquesets{namespace=a,phase=Running,workload_type=Training} value:1`,
		`copse_podcliquesets{namespace=b,phase=Running,workload_type=Training} value:1`,
		`copse_podcliquesets{namespace=b,phase=Succeeded,workload_type=Training} value:1`,
	}, "\n")
	if got != want {
		t.Errorf("collected:\n%s\nwant:\n%s", got, want)
	}
}

func TestCountTrainJobs(t *testing.T) {
	job := func(ns, runtimeKind, runtime string, managedBy *string, conditions ...string) trainerv1alpha1.TrainJob {
		j := trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		j.Spec.RuntimeRef.Name = runtime
		if runtimeKind != "" {
			j.Spec.RuntimeRef.Kind = ptr.To(runtimeKind)
		}
		j.Spec.ManagedBy = managedBy
		for _, c := range conditions {
			j.Status.Conditions = append(j.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue})
		}
		return j
	}
	pcsRuntime := trainerv1alpha1.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "pcs"}}
	pcsRuntime.Spec.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
	jobSetRuntime := trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "local"}}
	got := countTrainJobs([]trainerv1alpha1.TrainJob{
		job("a", "", "pcs", nil),
		job("a", "", "pcs", nil, trainerv1alpha1.TrainJobComplete),
		job("a", trainerv1alpha1.TrainingRuntimeKind, "local", nil, trainerv1alpha1.TrainJobSuspended),
		job("b", trainerv1alpha1.TrainingRuntimeKind, "local", nil), // a's runtime is not b's
		job("a", "", "pcs", ptr.To("kueue.x-k8s.io/multikueue")),    // not copse's to run
		job("a", "", "pcs", ptr.To(trainerv1alpha1.ManagedByTrainJobController), trainerv1alpha1.TrainJobFailed),
	}, []trainerv1alpha1.TrainingRuntime{jobSetRuntime}, []trainerv1alpha1.ClusterTrainingRuntime{pcsRuntime})
	want := map[[3]string]int{
		{"a", "PodCliqueSet", "Active"}: 1, {"a", "PodCliqueSet", "Complete"}: 1, {"a", "PodCliqueSet", "Failed"}: 1,
		{"a", "JobSet", "Suspended"}: 1, {"b", "Unknown", "Active"}: 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("countTrainJobs %v, want %v", got, want)
	}
}

// gpuRequests computes a pod's request once, keeps it while the pod holds
// its node, and forgets the pods that went or ended.
func TestGPURequestsRemembersPodsThatHoldANode(t *testing.T) {
	pod := func(uid string, gpus int64, node string, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		p.Spec.NodeName = node
		gpu := corev1.ResourceList{mnnvl.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
		p.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}}
		p.Status.Phase = phase
		return p
	}
	var g gpuRequests
	first := g.of([]corev1.Pod{pod("a", 4, "n1", corev1.PodRunning), pod("b", 2, "", corev1.PodPending), pod("c", 8, "n2", corev1.PodSucceeded)})
	if want := map[types.UID]int64{"a": 4}; !maps.Equal(first, want) {
		t.Fatalf("first scrape %v, want %v: only the bound pod that has not ended", first, want)
	}
	// The remembered value is used: a pod's GPU request does not change,
	// so a listed copy with another request proves the lookup.
	second := g.of([]corev1.Pod{pod("a", 1, "n1", corev1.PodRunning), pod("b", 2, "n3", corev1.PodRunning)})
	if want := map[types.UID]int64{"a": 4, "b": 2}; !maps.Equal(second, want) {
		t.Fatalf("second scrape %v, want %v", second, want)
	}
	if third := g.of(nil); len(third) != 0 || len(g.byUID) != 0 {
		t.Fatalf("pods gone: %v remembered", g.byUID)
	}
}
