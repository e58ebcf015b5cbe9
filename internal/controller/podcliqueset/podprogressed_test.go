package podcliqueset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A pod's update reaches the PodCliqueSet when it changes an input of its
// status: the phase, a start, readiness, deletion and the scheduler's verdict
// (PodGangsScheduled is read from it).
func TestPodProgressed(t *testing.T) {
	pending := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	withScheduled := func(status corev1.ConditionStatus, reason string) *corev1.Pod {
		p := pending()
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: status, Reason: reason, Message: "0/3 nodes are available"}}
		return p
	}
	relabelled := pending()
	relabelled.Labels = map[string]string{"x": "y"}
	running := pending()
	running.Status.Phase = corev1.PodRunning
	cases := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"a label changes", pending(), relabelled, false},
		{"the phase changes", pending(), running, true},
		{"the scheduler refuses the pod", pending(), withScheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable), true},
		{"the scheduler places the pod", withScheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable), withScheduled(corev1.ConditionTrue, ""), true},
		{"the same refusal again", withScheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable), withScheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podProgressed().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("podProgressed on %s = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
