package kueue

import (
	"fmt"
	"maps"
	"math"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podcount"
)

// CliquesPath is where a PodCliqueSet's clique templates are, the field a
// refusal of too many pod sets names.
var CliquesPath = field.NewPath("spec", "template", "cliques")

// QueueName is the LocalQueue the PodCliqueSet is submitted to: its label
// kueue.x-k8s.io/queue-name, "" when it has none (an empty value is none,
// as for Kueue's own jobs).
func QueueName(obj metav1.Object) string {
	return obj.GetLabels()[QueueNameLabel]
}

// Priority is what a Workload's priority comes from.
type Priority struct {
	// ClassRef names the WorkloadPriorityClass or PriorityClass; nil when
	// neither is set and no PriorityClass is the global default.
	ClassRef *kueue.PriorityClassRef
	// Value is the class's value, 0 without a class.
	Value int32
}

// ResolvePriority is the priority of pcs's Workload, as Kueue gives one to
// its own jobs: the WorkloadPriorityClass of the label
// kueue.x-k8s.io/priority-class (wpc is that class as read, nil when it was
// not found); else the PriorityClass of the first clique whose pods have a
// priorityClassName (a clique's own, or the template's), looked up in
// priorityClasses; else the global default PriorityClass of
// priorityClasses; else 0. A class that is named but missing is an error
// naming the label or the clique.
func ResolvePriority(pcs *copsev1alpha1.PodCliqueSet, wpc *kueue.WorkloadPriorityClass,
	priorityClasses []schedulingv1.PriorityClass) (Priority, error) {
	if name := pcs.Labels[PriorityClassLabel]; name != "" {
		if wpc == nil || wpc.Name != name {
			return Priority{}, fmt.Errorf("metadata.labels[%s]: WorkloadPriorityClass %q not found", PriorityClassLabel, name)
		}
		return Priority{ClassRef: kueue.NewWorkloadPriorityClassRef(wpc.Name), Value: wpc.Value}, nil
	}
	for _, template := range pcs.Spec.Template.Cliques {
		if template == nil {
			continue
		}
		clique := generationhash.Clique(pcs, template)
		name := clique.PodSpec.PriorityClassName
		if name == "" {
			continue
		}
		for _, pc := range priorityClasses {
			if pc.Name == name {
				return Priority{ClassRef: kueue.NewPodPriorityClassRef(pc.Name), Value: pc.Value}, nil
			}
		}
		return Priority{}, fmt.Errorf("the pods of clique %q have priorityClassName %q: PriorityClass not found", clique.Name, name)
	}
	// As the API server does for pods without a class: the global default,
	// the lowest one if several claim to be it.
	var global *schedulingv1.PriorityClass
	for i := range priorityClasses {
		pc := &priorityClasses[i]
		if pc.GlobalDefault && (global == nil || pc.Value < global.Value) {
			global = pc
		}
	}
	if global != nil {
		return Priority{ClassRef: kueue.NewPodPriorityClassRef(global.Name), Value: global.Value}, nil
	}
	return Priority{}, nil
}

// PodSets are the pod sets of pcs's Workload, one per clique template in
// template order, named after the clique: its count is every pod of that
// clique over all replicas (spec.replicas × the clique's replicas, × its
// scaling group's replicas for a grouped clique; an autoscaled clique or
// group counts at its maxReplicas, which the autoscaler may reach without
// another admission), its template the clique's pod labels, annotations and
// pod spec (with the priorityClassName its pods take). topology, filled by
// the topology integration, gives a clique's topologyRequest; nil for none.
// maxPodSets is the most pod sets the Kueue in use takes (ServedMaxPodSets;
// 0 for DefaultMaxPodSets): copse makes one per clique template, so a
// queued PodCliqueSet has at most this many cliques.
func PodSets(pcs *copsev1alpha1.PodCliqueSet, topology map[string]*kueue.PodSetTopologyRequest, maxPodSets int) ([]kueue.PodSet, error) {
	var cliques []*grovecorev1alpha1.PodCliqueTemplateSpec
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			cliques = append(cliques, clique)
		}
	}
	if limit := EffectiveMaxPodSets(maxPodSets); len(cliques) > limit {
		return nil, fmt.Errorf("%s: %d cliques, but a Kueue Workload has at most %d pod sets (one per clique)",
			CliquesPath, len(cliques), limit)
	}
	groupOf := map[string]*grovecorev1alpha1.PodCliqueScalingGroupConfig{}
	for g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		group := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[g]
		for _, name := range group.CliqueNames {
			groupOf[name] = group
		}
	}
	podSets := make([]kueue.PodSet, 0, len(cliques))
	for i, clique := range cliques {
		perReplica, _ := podcount.Clique(&clique.Spec, nil)
		if group := groupOf[clique.Name]; group != nil {
			perReplica = podcount.Mul(perReplica, podcount.ScalingGroupReplicas(group))
		}
		count := podcount.Mul(perReplica, max(int64(pcs.Spec.Replicas), 0))
		if count > math.MaxInt32 {
			return nil, fmt.Errorf("%s: clique %q has %d pods over all replicas, more than a Kueue pod set counts (%d)",
				CliquesPath.Index(i), clique.Name, count, math.MaxInt32)
		}
		template := generationhash.Clique(pcs, clique)
		podSets = append(podSets, kueue.PodSet{
			Name: kueue.PodSetReference(clique.Name),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(template.Labels), Annotations: maps.Clone(template.Annotations)},
				Spec:       template.PodSpec,
			},
			Count:           int32(count),
			TopologyRequest: topology[clique.Name],
		})
	}
	return podSets, nil
}

// BuildWorkload is the Workload pcs queues with: WorkloadName, in pcs's
// namespace, controlled by pcs (it goes when pcs goes), held by Kueue's
// finalizer kueue.x-k8s.io/resource-in-use (Decide releases it), labelled
// as copse's, with pcs's pod sets, its LocalQueue and its priority.
func BuildWorkload(pcs *copsev1alpha1.PodCliqueSet, podSets []kueue.PodSet, priority Priority) *kueue.Workload {
	return &kueue.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: kueue.SchemeGroupVersion.String(), Kind: WorkloadGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkloadName(pcs.Name),
			Namespace: pcs.Namespace,
			Labels:    labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ComponentKey: WorkloadComponent}),
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(pcs, copsev1alpha1.SchemeGroupVersion.WithKind("PodCliqueSet")),
			},
			Finalizers: []string{kueue.ResourceInUseFinalizerName},
		},
		Spec: kueue.WorkloadSpec{
			PodSets:          podSets,
			QueueName:        kueue.LocalQueueName(QueueName(pcs)),
			PriorityClassRef: priority.ClassRef,
			Priority:         &priority.Value,
		},
	}
}

// WorkloadComponent is the component label of a PodCliqueSet's Kueue
// Workload (labels.ComponentKey).
const WorkloadComponent = "kueue-workload"

// Mismatch says how a Workload differs from the one its PodCliqueSet asks
// for, "" when it does not: the pod sets (names, counts, and the resources
// of their containers and init containers, which is what Kueue admits), the
// pods' tolerations unless compareTolerations is false (an admission adds
// its flavors' tolerations to the templates), and, unless the Workload holds
// quota (Kueue keeps both fixed then), the LocalQueue and the priority class,
// and the pod sets' topology requests (a ClusterTopologyBinding changed under
// an admitted Workload takes effect at its next queueing, as packing does
// for PodGroups, rather than stopping it).
func Mismatch(want, have *kueue.Workload, compareTolerations, reserved bool) string {
	if len(want.Spec.PodSets) != len(have.Spec.PodSets) {
		return fmt.Sprintf("%d pod sets instead of %d", len(want.Spec.PodSets), len(have.Spec.PodSets))
	}
	for i := range want.Spec.PodSets {
		w, h := &want.Spec.PodSets[i], &have.Spec.PodSets[i]
		switch {
		case w.Name != h.Name:
			return fmt.Sprintf("pod set %d is %q instead of %q", i, w.Name, h.Name)
		case w.Count != h.Count:
			return fmt.Sprintf("pod set %q counts %d pods instead of %d", w.Name, w.Count, h.Count)
		case !sameResources(w.Template.Spec.InitContainers, h.Template.Spec.InitContainers) ||
			!sameResources(w.Template.Spec.Containers, h.Template.Spec.Containers):
			return fmt.Sprintf("the containers of pod set %q changed", w.Name)
		case compareTolerations && !equality.Semantic.DeepEqual(w.Template.Spec.Tolerations, h.Template.Spec.Tolerations):
			return fmt.Sprintf("the tolerations of pod set %q changed", w.Name)
		case !reserved && !equality.Semantic.DeepEqual(w.TopologyRequest, h.TopologyRequest):
			return fmt.Sprintf("the topology request of pod set %q changed", w.Name)
		}
	}
	if reserved {
		return ""
	}
	if want.Spec.QueueName != have.Spec.QueueName {
		return fmt.Sprintf("LocalQueue %q instead of %q", want.Spec.QueueName, have.Spec.QueueName)
	}
	if priorityClassName(want) != priorityClassName(have) {
		return fmt.Sprintf("priority class %q instead of %q", priorityClassName(want), priorityClassName(have))
	}
	return ""
}

func priorityClassName(wl *kueue.Workload) string {
	if ref := wl.Spec.PriorityClassRef; ref != nil {
		return string(ref.Kind) + "/" + ref.Name
	}
	return ""
}

// sameResources: the same containers by name, restart policy (a sidecar's
// requests count differently) and resources.
func sameResources(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !equality.Semantic.DeepEqual(a[i].RestartPolicy, b[i].RestartPolicy) ||
			!equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
			return false
		}
	}
	return true
}
