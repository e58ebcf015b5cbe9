package kueue

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

// PodSetIndexLabel is, on a pod of a PodCliqueSet queued through Kueue, the
// pod's index in its clique's pod set: the clique's PodCliques in order of
// replica, then scaling-group replica, and the pods of each by index. A
// topology request with slices names it as its podIndexLabel, so that
// Kueue's TopologyUngater gives each slice of consecutive indices (one
// replica's, or one scaling-group replica's, pods of the clique) the domain
// it found for that slice, not any pods of the pod set.
const PodSetIndexLabel = "copse.dev/podset-index"

// PodSetIndex is the index PodSetIndexLabel carries for the pod at
// podIndex of the PodClique of clique, replica and groupReplica (0 for a
// standalone clique). Each PodClique takes as many indices as the Workload
// counts for it (an autoscaled clique or group its maxReplicas), so an
// index never moves when an autoscaler scales. ok is false for a pod the
// Workload does not count: past those bounds.
func PodSetIndex(pcs *copsev1alpha1.PodCliqueSet, clique string, replica, groupReplica, podIndex int) (index int, ok bool) {
	shape, known := podSetShapes(pcs)[clique]
	if !known || podIndex >= shape.pods || groupReplica >= shape.groupReplicas || replica >= shape.replicas {
		return 0, false
	}
	return shape.run(replica, groupReplica, groupReplica+1).start + podIndex, true
}

// PodSetIndexDecorator labels each pod of a PodCliqueSet that carries
// QueueNameLabel with its PodSetIndexLabel. The operator adds it when the
// Kueue integration is on.
func PodSetIndexDecorator() blueprint.PodDecorator {
	return blueprint.PodDecorator{Name: "kueue-podset-index", Decorate: addPodSetIndex}
}

func addPodSetIndex(pod *corev1.Pod, pc blueprint.PodContext) error {
	if _, queued := pc.PodCliqueSet.Labels[QueueNameLabel]; !queued {
		return nil
	}
	id := pc.Identity
	index, ok := PodSetIndex(pc.PodCliqueSet, id.Clique, id.Replica, id.ScalingGroupReplica, pc.Index)
	if !ok {
		return nil
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[PodSetIndexLabel] = strconv.Itoa(index)
	return nil
}
