package scheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// Workload is the backend for Kubernetes' native gang scheduling
// (scheduling.k8s.io/v1beta1): one Workload per PodCliqueSet whose pod-group
// templates describe the gang shapes, and one PodGroup per gang. Pods join a
// PodGroup through spec.schedulingGroup, and kube-scheduler binds all of a
// PodGroup's minCount pods or none. Both are rows of the PodCliqueSet
// controller's resource table, which keeps them.
type Workload struct{}

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create;update;patch;delete

// Name implements Backend.
func (w *Workload) Name() string { return BackendWorkload }

// PodDecorator implements Backend: the pod joins the PodGroup named by its
// PodClique's gang label.
func (w *Workload) PodDecorator() blueprint.PodDecorator {
	return blueprint.PodDecorator{Name: "scheduler-workload", Decorate: joinGang}
}

func joinGang(pod *corev1.Pod, pc blueprint.PodContext) error {
	if pc.GangPlaced {
		// The gang's minCount counts pods that are still to run: a late pod
		// whose peers have ended would wait for them for good.
		return nil
	}
	if pc.Identity.Gang == "" {
		return fmt.Errorf("label %s is missing; gang scheduling is on and the pods cannot join a gang without it", labels.PodGangKey)
	}
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(pc.Identity.Gang)}
	return nil
}

// PodGroupKind is the Workload backend's resource table row of gangs;
// WorkloadKind its row of the PodCliqueSet's Workload.
const (
	PodGroupKind = "PodGroup"
	WorkloadKind = "Workload"
)

// ReplicaResources implements Backend: one PodGroup per gang of each
// replica, and the PodCliqueSet's Workload.
func (w *Workload) ReplicaResources() []blueprint.ReplicaResource {
	return []blueprint.ReplicaResource{{
		Kind:      PodGroupKind,
		NewObject: func() client.Object { return &schedulingv1beta1.PodGroup{} },
		NewList:   func() client.ObjectList { return &schedulingv1beta1.PodGroupList{} },
		Desired: func(in blueprint.ReplicaInputs) []client.Object {
			var out []client.Object
			for _, gang := range blueprint.ReplicaGangs(in.PodCliqueSet, in.Replica, in.GroupReplicas, in.Packing) {
				out = append(out, podGroupFor(in.PodCliqueSet, gang, in.Attempt))
			}
			return out
		},
		Refresh: children.RefreshAs(refreshMinCount),
		// A new run of the replica is a new gang: its pods are scheduled
		// all-or-nothing again, and the old run's pods never count.
		RecreatedWithReplica: true,
	}, {
		// The Workload belongs to the PodCliqueSet as a whole. Its pod-group
		// templates are immutable (no Refresh): a change of gang shape (a
		// new minAvailable) or of packing (a ClusterTopologyBinding created
		// or changed later) applies to the PodGroups created from then on,
		// which carry their own policy and constraints.
		Kind:      WorkloadKind,
		NewObject: func() client.Object { return &schedulingv1beta1.Workload{} },
		NewList:   func() client.ObjectList { return &schedulingv1beta1.WorkloadList{} },
		Shared: func(in blueprint.ReplicaInputs) []client.Object {
			gangs := blueprint.DesiredGangs(in.PodCliqueSet, in.GroupReplicas, in.Packing)
			return []client.Object{workloadFor(in.PodCliqueSet, gangs)}
		},
	}}
}

// refreshMinCount gives an existing PodGroup the gang's minCount now (a
// minAvailable changed in the template). The Workload API lets a
// PodGroup's schedulingPolicy change in place (only its workloadRef and
// schedulingConstraints are immutable, k8s.io/api scheduling/v1beta1), and
// kube-scheduler reads the PodGroup when it next places a pod of it. A
// PodGroup of another run of its replica is left alone.
func refreshMinCount(existing, desired *schedulingv1beta1.PodGroup) bool {
	if existing.Labels[labels.AttemptKey] != desired.Labels[labels.AttemptKey] {
		return false
	}
	have, want := existing.Spec.SchedulingPolicy.Gang, desired.Spec.SchedulingPolicy.Gang
	if have == nil || want == nil || have.MinCount == want.MinCount {
		return false
	}
	have.MinCount = want.MinCount
	return true
}

// workloadFor is the PodCliqueSet's Workload: one pod-group template per
// gang template, with its policy and topology constraint.
func workloadFor(pcs *copsev1alpha1.PodCliqueSet, gangs []blueprint.Gang) *schedulingv1beta1.Workload {
	desired := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      naming.PodCliqueSetWorkload(pcs.Name),
			Labels:    labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ComponentKey: labels.ComponentWorkload}),
		},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{
				APIGroup: copsev1alpha1.GroupName, Kind: "PodCliqueSet", Name: pcs.Name,
			},
		},
	}
	for _, tmpl := range blueprint.TemplateMinCounts(gangs) {
		desired.Spec.PodGroupTemplates = append(desired.Spec.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{
			Name:                  tmpl.Template,
			SchedulingPolicy:      policyOf(tmpl),
			SchedulingConstraints: constraintsOf(tmpl),
		})
	}
	if len(desired.Spec.PodGroupTemplates) == 0 {
		// A PodCliqueSet scaled to zero has no gangs; a Workload needs a template.
		desired.Spec.PodGroupTemplates = []schedulingv1beta1.PodGroupTemplate{{Name: blueprint.BaseTemplate, SchedulingPolicy: gangPolicy(1)}}
	}
	return desired
}

func podGroupFor(pcs *copsev1alpha1.PodCliqueSet, gang blueprint.Gang, attempt int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      gang.Name,
			Labels: labels.Merge(labels.ForReplica(pcs.Name, gang.ReplicaIndex), map[string]string{
				labels.ComponentKey: labels.ComponentPodGroup,
				labels.AttemptKey:   fmt.Sprint(max(attempt, 0)),
			}),
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: naming.PodCliqueSetWorkload(pcs.Name), TemplateName: gang.Template},
			SchedulingPolicy:      policyOf(gang),
			SchedulingConstraints: constraintsOf(gang),
		},
	}
}

// constraintsOf is a gang's topology constraint: every pod of the PodGroup
// in one domain of its TopologyKey (kube-scheduler's topology-aware
// workload scheduling), none when the gang is not packed. The field is
// immutable: a PodGroup keeps the packing it was created with.
func constraintsOf(gang blueprint.Gang) *schedulingv1beta1.PodGroupSchedulingConstraints {
	if gang.TopologyKey == "" {
		return nil
	}
	return &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: gang.TopologyKey}}}
}

// policyOf is a gang's scheduling policy: all-or-nothing for minCount pods,
// or basic (each pod on its own) for a replica's prelude.
func policyOf(gang blueprint.Gang) schedulingv1beta1.PodGroupSchedulingPolicy {
	if gang.Basic {
		return schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	}
	return gangPolicy(gang.MinCount)
}

func gangPolicy(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: max(minCount, 1)}}
}
