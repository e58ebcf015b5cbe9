package metrics

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// cacheLikeReader answers List as the manager's informer cache does for
// the collector's reads (client.UnsafeDisableDeepCopy): a shallow copy of
// every stored object into the list, no deep copy, no conversion.
type cacheLikeReader struct {
	client.Reader
	sets    []copsev1alpha1.PodCliqueSet
	cliques []copsev1alpha1.PodClique
	pods    []corev1.Pod
}

func (r *cacheLikeReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *copsev1alpha1.PodCliqueSetList:
		l.Items = append(l.Items[:0], r.sets...)
	case *copsev1alpha1.PodCliqueList:
		l.Items = append(l.Items[:0], r.cliques...)
	case *corev1.PodList:
		l.Items = append(l.Items[:0], r.pods...)
	default:
		return fmt.Errorf("unexpected list %T", list)
	}
	return nil
}

// BenchmarkStateCollectorScaleRun is one scrape of the state gauges over
// the objects of `make bench-scale` (10,000 pods of 4 GPUs, 110
// PodCliqueSets over 10 namespaces, one PodClique per 10 pods, each with
// the three conditions the gauges read): the CPU a scrape costs the
// operator, for docs/observability.md's cost section.
func BenchmarkStateCollectorScaleRun(b *testing.B) {
	r := &cacheLikeReader{}
	gpu := corev1.ResourceList{mnnvl.GPUResource: *resource.NewQuantity(4, resource.DecimalSI)}
	for i := range 110 {
		pcs := copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("w%d", i)}}
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		pcs.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypePodGangsScheduled, Status: metav1.ConditionTrue}}
		r.sets = append(r.sets, pcs)
	}
	for i := range 10_000 {
		set := r.sets[i%len(r.sets)]
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: set.Namespace, Name: fmt.Sprintf("p%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), Labels: map[string]string{labels.PartOfKey: set.Name}}}
		pod.Spec.NodeName = fmt.Sprintf("node-%d", i%1000)
		pod.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}}
		pod.Status.Phase = corev1.PodRunning
		r.pods = append(r.pods, pod)
		if i%10 == 0 {
			pclq := copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: set.Namespace, Name: fmt.Sprintf("c%d", i)}}
			pclq.Status.Conditions = []metav1.Condition{
				{Type: copsev1alpha1.ConditionTypeStartupBlocked, Status: metav1.ConditionFalse},
				{Type: copsev1alpha1.ConditionTypePodCreationBlocked, Status: metav1.ConditionFalse},
				{Type: copsev1alpha1.ConditionTypePodCreationRefused, Status: metav1.ConditionFalse},
			}
			r.cliques = append(r.cliques, pclq)
		}
	}
	collector := &StateCollector{Reader: r}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ch := make(chan prometheus.Metric, 1024)
		collector.Collect(ch)
		close(ch)
	}
}
