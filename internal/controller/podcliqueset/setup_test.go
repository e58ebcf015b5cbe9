package podcliqueset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestPodProgressed: the pod updates that reach the PodCliqueSet are those
// that change what its decisions read of a pod (podstate.Of), "started"
// included: a container that terminated without ever starting has not
// started; and the scheduler's verdict.
func TestPodProgressed(t *testing.T) {
	now := metav1.Now()
	pending := func() *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	}
	cases := []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"nothing", func(*corev1.Pod) {}, false},
		{"a label", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		{"a container starts", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}, true},
		{"a container ends without having started", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError"}}
		}, false},
		{"the phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, true},
		{"readiness", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, true},
		{"a deletion starts", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		// PodGangsScheduled is read from the scheduler's verdict on each pod.
		{"the scheduler refuses it", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
		}, true},
		{"the scheduler places it", func(p *corev1.Pod) {
			p.Spec.NodeName = "node-1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, cur := pending(), pending()
			c.change(cur)
			if got := podProgressed().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != c.want {
				t.Errorf("passes %v, want %v", got, c.want)
			}
		})
	}
}
