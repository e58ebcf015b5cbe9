package blueprint

import (
	"maps"
	"strconv"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/topology"
)

// ReplicaService is the headless Service of replica r. It selects every pod
// of the replica, so each pod resolves as <hostname>.<service>.
func ReplicaService(pcs *copsev1alpha1.PodCliqueSet, replica int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      naming.ReplicaService(pcs.Name, replica),
			Labels:    labels.Merge(labels.ForReplica(pcs.Name, replica), map[string]string{labels.ComponentKey: labels.ComponentHeadlessService}),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 labels.ForReplica(pcs.Name, replica),
			PublishNotReadyAddresses: pcs.PublishNotReadyAddresses(),
		},
	}
}

// ScalingGroup is the PodCliqueScalingGroup of one scaling group in replica r.
func ScalingGroup(pcs *copsev1alpha1.PodCliqueSet, replica int, group grovecorev1alpha1.PodCliqueScalingGroupConfig, attempt int32) *copsev1alpha1.PodCliqueScalingGroup {
	minAvailable := copsev1alpha1.ScalingGroupMinAvailable(group)
	return &copsev1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   pcs.Namespace,
			Name:        naming.ScalingGroup(pcs.Name, replica, group.Name),
			Labels:      labels.Merge(labels.ForReplica(pcs.Name, replica), attemptLabel(attempt), map[string]string{labels.ComponentKey: labels.ComponentScalingGroup}),
			Annotations: labels.Merge(group.Annotations, templateReplicas(copsev1alpha1.ScalingGroupReplicas(group), group.ScaleConfig != nil)),
		},
		Spec: grovecorev1alpha1.PodCliqueScalingGroupSpec{
			Replicas:     copsev1alpha1.ScalingGroupReplicas(group),
			MinAvailable: &minAvailable,
			CliqueNames:  append([]string(nil), group.CliqueNames...),
		},
	}
}

// StandalonePodClique is the PodClique of a clique that belongs to no
// scaling group, in replica r. Its pods join the replica's base gang, or
// its prelude (GangOfStandaloneClique). Its pod template carries the pod
// affinity of packing (TopologyAffinity).
func StandalonePodClique(pcs *copsev1alpha1.PodCliqueSet, replica int, clique *grovecorev1alpha1.PodCliqueTemplateSpec, attempt int32, packing topology.Resolved) *copsev1alpha1.PodClique {
	name := naming.StandalonePodClique(pcs.Name, replica, clique.Name)
	pclq := podClique(pcs, clique, name, labels.Merge(labels.ForReplica(pcs.Name, replica), map[string]string{
		labels.ComponentKey: labels.ComponentPodCliqueOfSet,
		labels.PodGangKey:   GangOfStandaloneClique(pcs, replica, clique.Name),
	}), attempt)
	addTopologyAffinity(pcs, pclq, packing)
	return pclq
}

// GroupedPodClique is the PodClique of a clique in replica groupReplica of
// a PodCliqueScalingGroup. The group's first minAvailable replicas join the
// PodCliqueSet replica's base gang; the others each form a gang of their own.
// Its pod template carries the pod affinity of packing (TopologyAffinity).
func GroupedPodClique(pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup, groupReplica int32,
	clique *grovecorev1alpha1.PodCliqueTemplateSpec, packing topology.Resolved) *copsev1alpha1.PodClique {
	replica, _ := labels.Index(pcsg.Labels, labels.ReplicaKey)
	attempt, _ := labels.Index(pcsg.Labels, labels.AttemptKey)
	name := naming.GroupedPodClique(pcsg.Name, int(groupReplica), clique.Name)
	pclq := podClique(pcs, clique, name, labels.Merge(labels.ForReplica(pcs.Name, replica), map[string]string{
		labels.ComponentKey:           labels.ComponentPodCliqueOfGroup,
		labels.ScalingGroupKey:        pcsg.Name,
		labels.ScalingGroupReplicaKey: strconv.Itoa(int(groupReplica)),
		labels.PodGangKey:             GangOfGroupReplica(pcs.Name, replica, pcsg.Name, groupReplica, pcsg.MinAvailable()),
	}), int32(attempt))
	addTopologyAffinity(pcs, pclq, packing)
	if key := packing.Replica.RequiredKey; key != "" {
		// Whether the group replica is a scaled gang may change with the
		// group's minAvailable (Inference); the key is recorded for every
		// group replica, and BaseGangHoldKey reads the gang label at the
		// time pods are created.
		pclq.Annotations = labels.Merge(pclq.Annotations, map[string]string{labels.ReplicaDomainKeyAnnotation: key})
	}
	return pclq
}

func podClique(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec, name string, copseLabels map[string]string, attempt int32) *copsev1alpha1.PodClique {
	// The user's template labels go first so that copse's keys always win:
	// a template label can never redirect a selector.
	objLabels := labels.Merge(clique.Labels, copseLabels, attemptLabel(attempt), map[string]string{
		labels.PodCliqueKey:       name,
		labels.CliqueTemplateKey:  clique.Name,
		labels.PodTemplateHashKey: generationhash.PodTemplateHash(pcs, clique),
	})
	// The template's defaults, so that a template the webhook never saw
	// gives the PodClique a defaulted one would.
	spec := *clique.Spec.DeepCopy()
	copsev1alpha1.DefaultCliqueSpec(&spec, pcs.Spec.WorkloadType)
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   pcs.Namespace,
			Name:        name,
			Labels:      objLabels,
			Annotations: labels.Merge(podCliqueAnnotations(pcs, clique), templateReplicas(spec.Replicas, spec.ScaleConfig != nil)),
		},
		Spec: spec,
	}
}

// podCliqueAnnotations are the clique template's annotations, plus the
// clique's MNNVL group (or "none") when it inherits one from its scaling
// group or the PodCliqueSet, so that the PodClique, its pods and the MNNVL
// pod decorator see the group without looking up the template's parents.
func podCliqueAnnotations(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec) map[string]string {
	out := copyMap(clique.Annotations)
	if group := mnnvl.CliqueGroup(pcs, clique.Name); group != mnnvl.NoGroup {
		out = labels.Merge(out, map[string]string{mnnvl.GroupAnnotation: group})
	}
	return out
}

// attemptLabel marks which run of its replica an object belongs to: 0 for
// the first, n after the replica's n-th recreation.
func attemptLabel(attempt int32) map[string]string {
	return map[string]string{labels.AttemptKey: strconv.Itoa(int(max(attempt, 0)))}
}

// templateReplicas records the template's replica count an object was
// built or last refreshed with (labels.TemplateReplicasAnnotation); none for
// an autoscaled object, whose count the scale subresource owns.
func templateReplicas(n int32, autoscaled bool) map[string]string {
	if autoscaled {
		return nil
	}
	return map[string]string{labels.TemplateReplicasAnnotation: strconv.Itoa(int(n))}
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
