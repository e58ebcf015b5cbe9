package kueue

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// TopologyInfo is what the pods of a pod set need when Kueue admitted it
// with a topology assignment (Topology-Aware Scheduling), so that Kueue's
// TopologyUngater (pkg/controller/tas/topology_ungater.go) finds them and
// sends each to its assigned domain:
//   - the scheduling gate kueue.x-k8s.io/topology, which holds a pod until
//     the ungater has set its nodeSelector to a domain of the assignment
//     and removed the gate;
//   - the annotation kueue.x-k8s.io/workload naming the Workload, by which
//     it lists the pod set's pods (with the label PodSetLabel, which every
//     admission adds);
//   - the annotation of the pod set's topology request
//     (kueue.x-k8s.io/podset-required-topology, -preferred-topology, the
//     slice pair, the slice layers (-slice-required-topology-constraints),
//     or -unconstrained-topology for a pod set without one in a
//     topology-only ClusterQueue): its pod watch reacts only to pods that
//     carry one, so a pod created after the admission (copse creates them
//     once the PodCliqueSet starts) would otherwise wait gated for good,
//     and Kueue counts pods without one as usage outside its assignments.
//
// It is empty for an assignment without a topology assignment.
func TopologyInfo(wl *kueue.Workload, assignment *kueue.PodSetAssignment) PodSetInfo {
	if assignment.TopologyAssignment == nil {
		return PodSetInfo{}
	}
	var request *kueue.PodSetTopologyRequest
	for i := range wl.Spec.PodSets {
		if wl.Spec.PodSets[i].Name == assignment.Name {
			request = wl.Spec.PodSets[i].TopologyRequest
		}
	}
	return PodSetInfo{
		Annotations:     topologyAnnotations(wl.Name, request),
		SchedulingGates: []corev1.PodSchedulingGate{{Name: kueue.TopologySchedulingGate}},
	}
}

func topologyAnnotations(workloadName string, request *kueue.PodSetTopologyRequest) map[string]string {
	out := map[string]string{kueue.WorkloadAnnotation: workloadName}
	if request == nil {
		request = &kueue.PodSetTopologyRequest{}
	}
	switch {
	case request.Required != nil:
		out[kueue.PodSetRequiredTopologyAnnotation] = *request.Required
	case request.Preferred != nil:
		out[kueue.PodSetPreferredTopologyAnnotation] = *request.Preferred
	case request.PodSetSliceRequiredTopology == nil && len(request.PodsetSliceRequiredTopologyConstraints) == 0:
		out[kueue.PodSetUnconstrainedTopologyAnnotation] = "true"
	}
	if request.PodSetSliceRequiredTopology != nil && request.PodSetSliceSize != nil {
		out[kueue.PodSetSliceRequiredTopologyAnnotation] = *request.PodSetSliceRequiredTopology
		out[kueue.PodSetSliceSizeAnnotation] = strconv.Itoa(int(*request.PodSetSliceSize))
	}
	if layers := request.PodsetSliceRequiredTopologyConstraints; len(layers) > 0 {
		// Kueue's own encoding of the layers, which its job integrations
		// read from the same annotation.
		encoded, err := json.Marshal(layers)
		if err == nil {
			out[kueue.PodSetSliceRequiredTopologyConstraintsAnnotation] = string(encoded)
		}
	}
	return out
}
