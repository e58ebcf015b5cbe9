package realnode_test

import (
	"context"
	"fmt"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/copse-dev/copse/internal/labels"
)

// restartTimeline is what a watch of one pod saw of its restart in place
// on a real kubelet: when copse moved it to the attempt, when the restart
// agent exited (its own finishedAt, whole seconds), when the kubelet
// reported AllContainersRestarting and when it had started the containers
// again (the startup gate running with its restart count up by one), and
// how many status writes the kubelet made from the move to then. These are
// the figures the simulated kubelet's stages reproduce
// (docs/local-cluster.md, "Calibration").
type restartTimeline struct {
	moved, agentExited, restarting, stopped, rerun time.Time
	kubeletWrites                                  int
	// appStop is how the kubelet stopped the app container for the
	// restart: its exit code and reason.
	appStop       int32
	appStopReason string
	// history is each state the watch saw, for the suite's output.
	history []string
}

// String is one line for the suite's output.
func (t restartTimeline) String() string {
	return fmt.Sprintf("move -> agent exit %s (its finishedAt, whole seconds), move -> AllContainersRestarting %s, -> every container stopped %s (app exit %d %s), -> containers rerun %s; kubelet status writes from the move to the rerun: %d",
		t.agentExited.Sub(t.moved).Round(100*time.Millisecond), t.restarting.Sub(t.moved).Round(100*time.Millisecond),
		t.stopped.Sub(t.restarting).Round(100*time.Millisecond), t.appStop, t.appStopReason, t.rerun.Sub(t.stopped).Round(100*time.Millisecond), t.kubeletWrites)
}

// complete reports whether every step was seen.
func (t restartTimeline) complete() bool {
	return !t.moved.IsZero() && !t.agentExited.IsZero() && !t.restarting.IsZero() && !t.stopped.IsZero() && !t.rerun.IsZero()
}

// followRestart watches pod name in namespace until it has been restarted
// in place into attempt (or ctx ends) and returns what it saw. It runs in
// its own goroutine: start it before the restart.
func followRestart(ctx context.Context, namespace, name, attempt string) <-chan restartTimeline {
	out := make(chan restartTimeline, 1)
	go func() {
		defer GinkgoRecover()
		defer close(out)
		var t restartTimeline
		defer func() { out <- t }()
		w, err := env.Clientset.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			fmt.Fprintf(GinkgoWriter, "watch pod %s/%s: %v\n", namespace, name, err)
			return
		}
		defer w.Stop()
		var previous *corev1.Pod
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			seen := time.Now()
			if t.moved.IsZero() && pod.Labels[labels.AttemptKey] == attempt {
				t.moved = seen
			}
			if !t.moved.IsZero() && previous != nil && !reflect.DeepEqual(previous.Status, pod.Status) {
				t.kubeletWrites++ // copse writes no pod status: each status change is the kubelet's
			}
			if agent := initStatus(pod, labels.RestartAgentContainer); t.agentExited.IsZero() && agent != nil {
				if last := agent.LastTerminationState.Terminated; last != nil && last.ExitCode != 0 && last.Reason != "RestartingAllContainers" {
					t.agentExited = last.FinishedAt.Time
				} else if now := agent.State.Terminated; now != nil && now.ExitCode != 0 && now.Reason != "RestartingAllContainers" {
					t.agentExited = now.FinishedAt.Time
				}
			}
			if t.restarting.IsZero() && conditionTrue(pod, corev1.AllContainersRestarting) {
				t.restarting = seen
			}
			if !t.moved.IsZero() {
				t.history = append(t.history, seen.Format("15:04:05.000")+" "+describePodState(pod))
			}
			if app := pod.Status.ContainerStatuses; t.stopped.IsZero() && !t.restarting.IsZero() && len(app) > 0 {
				if stop := app[0].State.Terminated; stop != nil {
					t.stopped, t.appStop, t.appStopReason = seen, stop.ExitCode, stop.Reason
				} else if stop := app[0].LastTerminationState.Terminated; stop != nil && app[0].RestartCount > 0 {
					t.stopped, t.appStop, t.appStopReason = seen, stop.ExitCode, stop.Reason
				}
			}
			if gate := initStatus(pod, labels.StartupGateContainer); !t.stopped.IsZero() && gate != nil && gate.RestartCount > 0 && gate.State.Running != nil {
				t.rerun = seen
				return
			}
			previous = pod
		}
	}()
	return out
}

func initStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
