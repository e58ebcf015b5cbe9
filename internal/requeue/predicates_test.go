package requeue

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestUpdatesOf(t *testing.T) {
	pod := func(phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: phase}}
	}
	phaseChanged := func(old, cur *corev1.Pod) bool { return old.Status.Phase != cur.Status.Phase }
	for _, watched := range []Watched{UpdatesOnly, UpdatesAndDeletions} {
		p := UpdatesOf(watched, phaseChanged)
		if p.Create(event.CreateEvent{Object: pod(corev1.PodPending)}) || p.Generic(event.GenericEvent{Object: pod(corev1.PodPending)}) {
			t.Errorf("watched %d: a creation or a generic event passes", watched)
		}
		if got, want := p.Delete(event.DeleteEvent{Object: pod(corev1.PodRunning)}), watched == UpdatesAndDeletions; got != want {
			t.Errorf("watched %d: a deletion passes %v, want %v", watched, got, want)
		}
		if !p.Update(event.UpdateEvent{ObjectOld: pod(corev1.PodPending), ObjectNew: pod(corev1.PodRunning)}) {
			t.Errorf("watched %d: the update changed says yes to does not pass", watched)
		}
		if p.Update(event.UpdateEvent{ObjectOld: pod(corev1.PodRunning), ObjectNew: pod(corev1.PodRunning)}) {
			t.Errorf("watched %d: an update changed says no to passes", watched)
		}
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if p.Update(event.UpdateEvent{ObjectOld: other, ObjectNew: other}) {
			t.Errorf("watched %d: an update of another kind passes", watched)
		}
	}
	if c := CreationsAndDeletions(); c.Update(event.UpdateEvent{ObjectOld: pod(corev1.PodPending), ObjectNew: pod(corev1.PodRunning)}) ||
		!c.Create(event.CreateEvent{Object: pod(corev1.PodPending)}) || !c.Delete(event.DeleteEvent{Object: pod(corev1.PodPending)}) {
		t.Error("CreationsAndDeletions: want creations and deletions, no updates")
	}
}
