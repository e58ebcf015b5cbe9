package trainjob

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// A runtime's podGroupPolicy.coscheduling or .volcano gang-schedules its
// TrainJobs with another scheduler, as Kubeflow Trainer v2.3.0 does: the
// JobSet backend makes that scheduler's PodGroup for the TrainJob, named
// after it, and marks every pod as a member. copse runs neither scheduler;
// the PodGroup is what such a scheduler reads. The PodCliqueSet backend
// refuses both (podCliqueSetRefusals): its gangs are copse's own.
var (
	// CoschedulingPodGroupKind is the scheduler-plugins coscheduling
	// plugin's PodGroup.
	CoschedulingPodGroupKind = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
	// VolcanoPodGroupKind is the Volcano scheduler's PodGroup.
	VolcanoPodGroupKind = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
)

const (
	// CoschedulingPodGroupLabel names, on a pod, its coscheduling PodGroup.
	CoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group"
	// VolcanoGroupNameAnnotation names, on a pod, its Volcano PodGroup.
	VolcanoGroupNameAnnotation = "scheduling.k8s.io/group-name"
	// VolcanoQueueAnnotation, on the runtime's JobSet template (or a
	// runtime patch's), is the Volcano queue of the TrainJob's PodGroup.
	VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"

	// defaultScheduleTimeoutSeconds is the CRD default of
	// podGroupPolicy.coscheduling.scheduleTimeoutSeconds, for a runtime
	// object that never went through the API server.
	defaultScheduleTimeoutSeconds = 60
	// defaultHighestTierAllowed is the CRD default of
	// podGroupPolicy.volcano.networkTopology.highestTierAllowed.
	defaultHighestTierAllowed = 1
)

var podGroupPolicyPath = field.NewPath("spec", "podGroupPolicy")

// SchedulerPodGroupPolicy is the podGroupPolicy of another scheduler a
// runtime asks for: the PodGroup kind it needs and the field that asks.
type SchedulerPodGroupPolicy struct {
	Kind  schema.GroupVersionKind
	Field *field.Path
}

// SchedulerPodGroupPolicyOf returns the coscheduling or Volcano policy of a
// runtime's podGroupPolicy; ok is false for none (or copse's workload).
func SchedulerPodGroupPolicyOf(policy *trainerv1alpha1.PodGroupPolicy) (SchedulerPodGroupPolicy, bool) {
	switch {
	case policy == nil:
		return SchedulerPodGroupPolicy{}, false
	case policy.Coscheduling != nil:
		return SchedulerPodGroupPolicy{Kind: CoschedulingPodGroupKind, Field: podGroupPolicyPath.Child("coscheduling")}, true
	case policy.Volcano != nil:
		return SchedulerPodGroupPolicy{Kind: VolcanoPodGroupKind, Field: podGroupPolicyPath.Child("volcano")}, true
	}
	return SchedulerPodGroupPolicy{}, false
}

// markSchedulerPodGroupMembers puts every pod of the plan into the
// TrainJob's PodGroup of the scheduler the runtime names: the coscheduling
// label or the Volcano annotation, valued with the TrainJob's name.
func markSchedulerPodGroupMembers(p *Plan) {
	policy := p.PodGroupPolicy
	switch {
	case policy == nil:
	case policy.Coscheduling != nil:
		p.PodLabels = mergedInto(p.PodLabels, map[string]string{CoschedulingPodGroupLabel: p.TrainJob.Name})
	case policy.Volcano != nil:
		p.PodAnnotations = mergedInto(p.PodAnnotations, map[string]string{VolcanoGroupNameAnnotation: p.TrainJob.Name})
	}
}

// coschedulingPodGroupSpec is the spec of the scheduler-plugins PodGroup,
// as that API spells it.
type coschedulingPodGroupSpec struct {
	MinMember              int32               `json:"minMember,omitempty"`
	MinResources           corev1.ResourceList `json:"minResources"`
	ScheduleTimeoutSeconds *int32              `json:"scheduleTimeoutSeconds,omitempty"`
}

// volcanoPodGroupSpec is the spec of Volcano's PodGroup, as that API
// spells it.
type volcanoPodGroupSpec struct {
	MinMember         int32                   `json:"minMember,omitempty"`
	Queue             *string                 `json:"queue,omitempty"`
	PriorityClassName string                  `json:"priorityClassName,omitempty"`
	MinResources      corev1.ResourceList     `json:"minResources"`
	NetworkTopology   *volcanoNetworkTopology `json:"networkTopology,omitempty"`
}

type volcanoNetworkTopology struct {
	Mode               string `json:"mode"`
	HighestTierAllowed int    `json:"highestTierAllowed"`
}

// BuildSchedulerPodGroup is the TrainJob's PodGroup for the scheduler its
// runtime's podGroupPolicy names (coscheduling or Volcano), nil for none. It
// is named after the TrainJob and controlled by it. Its gang is every pod of
// every replicated job (minMember, the initializers included) and what they
// request together (minResources: each pod's effective requests, init and
// sidecar containers counted as the kube-scheduler counts them, times its
// job's pod count); for coscheduling, how long the gang may wait to be
// placed; for Volcano, the queue of the JobSet template's
// VolcanoQueueAnnotation, the priority class of the last replicated job
// that names one, and the network topology.
func BuildSchedulerPodGroup(p *Plan) (*unstructured.Unstructured, error) {
	policy, ok := SchedulerPodGroupPolicyOf(p.PodGroupPolicy)
	if !ok {
		return nil, nil
	}
	var members int32
	requests := corev1.ResourceList{}
	for i := range p.PodSets {
		podSet := &p.PodSets[i]
		members += podSet.Count
		spec := p.podSpec(podSet)
		if spec == nil {
			continue
		}
		for name, quantity := range resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{}) {
			quantity.Mul(int64(podSet.Count))
			total := requests[name]
			total.Add(quantity)
			requests[name] = total
		}
	}

	var spec any
	if c := p.PodGroupPolicy.Coscheduling; c != nil {
		spec = coschedulingPodGroupSpec{MinMember: members, MinResources: requests,
			ScheduleTimeoutSeconds: ptr.To(ptr.Deref(c.ScheduleTimeoutSeconds, defaultScheduleTimeoutSeconds))}
	} else {
		v := volcanoPodGroupSpec{MinMember: members, MinResources: requests}
		if queue, ok := p.Annotations[VolcanoQueueAnnotation]; ok {
			v.Queue = ptr.To(queue)
		}
		for _, rjob := range p.Spec.ReplicatedJobs {
			if name := rjob.Template.Spec.Template.Spec.PriorityClassName; name != "" {
				v.PriorityClassName = name
			}
		}
		if topology := p.PodGroupPolicy.Volcano.NetworkTopology; topology != nil {
			v.NetworkTopology = &volcanoNetworkTopology{Mode: topology.Mode,
				HighestTierAllowed: ptr.Deref(topology.HighestTierAllowed, defaultHighestTierAllowed)}
		}
		spec = v
	}
	object := struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              any `json:"spec"`
	}{
		TypeMeta: metav1.TypeMeta{APIVersion: policy.Kind.GroupVersion().String(), Kind: policy.Kind.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.TrainJob.Name,
			Namespace:       p.TrainJob.Namespace,
			Labels:          ownedLabels(p.TrainJob),
			OwnerReferences: []metav1.OwnerReference{ControllerReference(p.TrainJob)},
		},
		Spec: spec,
	}
	raw, err := json.Marshal(object)
	if err != nil {
		return nil, fmt.Errorf("encode the %s of TrainJob %s: %w", policy.Kind.Kind, p.TrainJob.Name, err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode the %s of TrainJob %s: %w", policy.Kind.Kind, p.TrainJob.Name, err)
	}
	return out, nil
}

// NewSchedulerPodGroup is an empty object of a scheduler's PodGroup kind,
// to read one into.
func NewSchedulerPodGroup(kind schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u
}

// validateVolcano is what Kubeflow Trainer's admission checks of a TrainJob
// whose runtime asks for Volcano, without the cluster: a Volcano queue
// named on the JobSet must not be empty. (VolcanoPriorityClassErrors checks
// the priority classes, which needs the cluster.)
func validateVolcano(p *Plan) field.ErrorList {
	if p.PodGroupPolicy == nil || p.PodGroupPolicy.Volcano == nil {
		return nil
	}
	if queue, ok := p.Annotations[VolcanoQueueAnnotation]; ok && queue == "" {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "annotations").Key(VolcanoQueueAnnotation), queue,
			"Volcano queue name must not be empty")}
	}
	return nil
}

// VolcanoPriorityClassErrors refuses, for a runtime that asks for Volcano,
// a replicated job whose pods name a PriorityClass that does not exist
// (exists says whether one does), as Kubeflow Trainer's admission does: the
// PodGroup would carry it. Like Trainer's, the check stops at the first job
// naming a system priority class, which always exists.
func VolcanoPriorityClassErrors(p *Plan, exists func(name string) (bool, error)) field.ErrorList {
	if p.PodGroupPolicy == nil || p.PodGroupPolicy.Volcano == nil {
		return nil
	}
	path := field.NewPath("spec", "templateSpec", "priorityClassName")
	var errs field.ErrorList
	for _, rjob := range p.Spec.ReplicatedJobs {
		name := rjob.Template.Spec.Template.Spec.PriorityClassName
		switch name {
		case "":
			continue
		case "system-cluster-critical", "system-node-critical":
			return errs
		}
		found, err := exists(name)
		switch {
		case err != nil:
			errs = append(errs, field.InternalError(path, fmt.Errorf("read PriorityClass %q: %w", name, err)))
		case !found:
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("PriorityClass %q doesn't exist", name)))
		}
	}
	return errs
}

// SchedulerPodGroupSpecDiffers reports whether an existing PodGroup's spec
// differs from the build in a field the build sets (fields the scheduler or
// the API server defaulted are left alone); quantities compare by value.
func SchedulerPodGroupSpecDiffers(existing, desired *unstructured.Unstructured) bool {
	want, _, _ := unstructured.NestedMap(desired.Object, "spec")
	have, _, _ := unstructured.NestedMap(existing.Object, "spec")
	for key, value := range want {
		if key == "minResources" {
			if !sameQuantities(value, have[key]) {
				return true
			}
			continue
		}
		if !equality.Semantic.DeepEqual(value, have[key]) {
			return true
		}
	}
	return false
}

// sameQuantities compares two decoded resource lists by value.
func sameQuantities(a, b any) bool {
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	if len(am) != len(bm) {
		return false
	}
	for name, value := range am {
		qa, errA := resource.ParseQuantity(fmt.Sprint(value))
		qb, errB := resource.ParseQuantity(fmt.Sprint(bm[name]))
		if errA != nil || errB != nil || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
