package podclique

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/copse-dev/copse/internal/labels"
)

func TestPodInfoOf(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		pod  corev1.Pod
		want podInfo
	}{
		{
			name: "running and ready",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u", Labels: map[string]string{labels.PodIndexKey: "4"}},
				Spec:       corev1.PodSpec{NodeName: "n"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				}},
			},
			want: podInfo{name: "a", uid: "u", index: 4, hasIndex: true, phase: corev1.PodRunning, ready: true, scheduled: true},
		},
		{
			name: "gated, terminating, index malformed",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &now, Labels: map[string]string{labels.PodIndexKey: "x"}},
				Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "g"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionFalse},
				}},
			},
			want: podInfo{name: "b", phase: corev1.PodPending, terminating: true, scheduleGated: true},
		},
		{
			name: "failed: the first non-zero exit code is named",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{labels.PodIndexKey: "1"}},
				Spec:       corev1.PodSpec{NodeName: "n"},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
					{Name: "train", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}},
				}},
			},
			want: podInfo{name: "c", index: 1, hasIndex: true, phase: corev1.PodFailed, scheduled: true,
				failure: "container train exited 137, OOMKilled"},
		},
		{
			name: "failed in an init container",
			pod: corev1.Pod{
				Status: corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "fetch", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
				}},
			},
			want: podInfo{phase: corev1.PodFailed, failure: "container fetch exited 2"},
		},
		{
			name: "failed without a container exit: the pod's reason",
			pod:  corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
			want: podInfo{phase: corev1.PodFailed, failure: "Evicted"},
		},
		{
			name: "failed without any detail",
			pod:  corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}},
			want: podInfo{phase: corev1.PodFailed, failure: "failed"},
		},
		{
			name: "succeeded pods have no failure",
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "train", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
			}}},
			want: podInfo{phase: corev1.PodSucceeded},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, podInfoOf(&c.pod), cmp.AllowUnexported(podInfo{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodInfoStates(t *testing.T) {
	cases := []struct {
		pod                  podInfo
		wantTerminal, active bool
	}{
		{p(0), false, true},
		{p(0, unscheduled), false, true},
		{p(0, failed), true, false},
		{p(0, succeeded), true, false},
		{p(0, terminating), false, false},
	}
	for _, c := range cases {
		if c.pod.terminal() != c.wantTerminal || c.pod.active() != c.active {
			t.Errorf("%+v: terminal %v active %v, want %v %v", c.pod, c.pod.terminal(), c.pod.active(), c.wantTerminal, c.active)
		}
	}
}
