package podclique

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/labels"
)

// podInfo is what the decisions need to know about one pod. Keeping it a
// small value type keeps the decisions free of the Kubernetes object model.
type podInfo struct {
	name string
	uid  types.UID
	// index is the pod's place in the clique (labels.PodIndexKey); hasIndex
	// is false when the label is absent or malformed.
	index    int
	hasIndex bool
	phase    corev1.PodPhase
	// terminating is true once the pod has a deletion timestamp.
	terminating   bool
	ready         bool
	scheduled     bool
	scheduleGated bool
	// failure says why a Failed pod failed, for condition messages; "" for
	// other pods.
	failure string
}

// terminal reports whether the pod's containers have all stopped for good.
func (p podInfo) terminal() bool {
	return p.phase == corev1.PodSucceeded || p.phase == corev1.PodFailed
}

// active reports whether the pod is, or may become, a running member of the
// clique: it neither ended nor is being deleted.
func (p podInfo) active() bool {
	return !p.terminal() && !p.terminating
}

// succeeded reports whether every container of the pod exited 0: the pod's
// phase is Succeeded. That stays true while the pod is being deleted.
func (p podInfo) succeeded() bool {
	return p.phase == corev1.PodSucceeded
}

func podInfoOf(pod *corev1.Pod) podInfo {
	index, hasIndex := labels.Index(pod.Labels, labels.PodIndexKey)
	info := podInfo{
		name:          pod.Name,
		uid:           pod.UID,
		index:         index,
		hasIndex:      hasIndex,
		phase:         pod.Status.Phase,
		terminating:   pod.DeletionTimestamp != nil,
		ready:         podReady(pod),
		scheduled:     pod.Spec.NodeName != "",
		scheduleGated: len(pod.Spec.SchedulingGates) > 0,
	}
	if pod.Status.Phase == corev1.PodFailed {
		info.failure = podFailure(pod)
	}
	return info
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podFailure describes why a Failed pod failed: the first container (app
// containers before init containers) that terminated with a non-zero exit
// code, e.g. "container train exited 137, OOMKilled"; without one, the
// pod's reason (e.g. "Evicted"), or "failed".
func podFailure(pod *corev1.Pod) string {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, s := range statuses {
			t := s.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			out := fmt.Sprintf("container %s exited %d", s.Name, t.ExitCode)
			if t.Reason != "" {
				out += ", " + t.Reason
			}
			return out
		}
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	return "failed"
}
