package podstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus seconds, as the API server stores it (whole seconds).
func at(seconds int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(seconds) * time.Second)) }

func running(name string, startedAt int) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(startedAt)}}}
}

func terminated(name string, exitCode int32, reason string, startedAt, finishedAt int) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: exitCode, Reason: reason, Message: reason + " message", StartedAt: at(startedAt), FinishedAt: at(finishedAt)}}}
}

// restarted is cs after the kubelet restarted its container n times.
func restarted(cs corev1.ContainerStatus, n int32) corev1.ContainerStatus {
	cs.RestartCount = n
	return cs
}

func waiting(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

// TestOfEveryField: a pod that sets everything copse reads is summarised
// field by field; a bare pod gives the zero values, with an unknown replica
// and no index.
func TestOfEveryField(t *testing.T) {
	deleting := at(600)
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "llm-0-worker-3", UID: "pod-uid",
			Labels: map[string]string{
				labels.PodCliqueKey: "llm-0-worker", labels.PodIndexKey: "3", labels.ReplicaKey: "2", labels.AttemptKey: "4",
				labels.PodTemplateHashKey: "hash-1", labels.PodGangKey: "llm-0",
			},
			Annotations:       map[string]string{labels.StartupGateAnnotation: "open", labels.RestartsAtMoveAnnotation: "1"},
			DeletionTimestamp: &deleting,
			Finalizers:        []string{"example.com/other", copsev1alpha1.OutcomeFinalizer},
			OwnerReferences: []metav1.OwnerReference{
				{Name: "not-the-controller", UID: "other-uid"},
				{Name: "llm-0-worker", UID: "pclq-uid", Controller: ptr.To(true)},
			},
		},
		Spec: corev1.PodSpec{NodeName: "node-7", SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(10)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(40)},
			},
			ContainerStatuses: []corev1.ContainerStatus{restarted(running("main", 30), 2), running("sidecar", 20), restarted(running(labels.RestartAgentContainer, 25), 7)},
		},
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Summary
	}{
		{
			name: "every field",
			pod:  full,
			want: Summary{
				Name: "llm-0-worker-3", UID: "pod-uid", PodClique: "llm-0-worker", Index: 3, HasIndex: true, Replica: 2, Attempt: 4,
				Phase: corev1.PodRunning, Terminating: true, DeletionDeadline: deleting.Time, Node: "node-7", Scheduled: true,
				ScheduledAt: at(10).Time, ScheduleGated: true, Started: true, StartedAt: at(20).Time, Ready: true, StartupGate: "open",
				HasOutcomeFinalizer: true, ControllerUID: "pclq-uid", TemplateHash: "hash-1", Gang: "llm-0",
				ContainerRestarts: 2, Moved: true, RestartsAtMove: 1,
			},
		},
		{
			name: "a bare pod: no index, replica unknown, nothing else",
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
			want: Summary{Name: "bare", Replica: -1},
		},
		{
			name: "malformed labels read as absent",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{
				labels.PodIndexKey: "x", labels.ReplicaKey: "-1", labels.AttemptKey: "two"}}},
			want: Summary{Name: "p", Replica: -1},
		},
		{
			name: "index 0 and replica 0 are known",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{
				labels.PodIndexKey: "0", labels.ReplicaKey: "0", labels.AttemptKey: "0"}}},
			want: Summary{Name: "p", HasIndex: true},
		},
		{
			name: "owner references without a controller give no ControllerUID",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{
				{UID: "a"}, {UID: "b", Controller: ptr.To(false)}}}},
			want: Summary{Name: "p", Replica: -1},
		},
		{
			name: "other finalizers are not the outcome finalizer",
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/other"}}},
			want: Summary{Name: "p", Replica: -1},
		},
		{
			name: "a Ready condition that is False is not ready",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}},
			want: Summary{Name: "p", Replica: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Of(tt.pod)); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOfScheduling: Scheduled is a node name; ScheduledAt is when
// PodScheduled turned True; Unschedulable is the scheduler's message (its
// reason when it has none) only while PodScheduled is False for want of
// room.
func TestOfScheduling(t *testing.T) {
	tests := []struct {
		name              string
		node              string
		gates             int
		condition         *corev1.PodCondition
		wantScheduled     bool
		wantScheduledAt   time.Time
		wantUnschedulable string
		wantGated         bool
	}{
		{name: "no condition, no node"},
		{name: "a node without a condition is scheduled, time unknown", node: "n1", wantScheduled: true},
		{
			name:          "PodScheduled True dates the scheduling",
			node:          "n1",
			condition:     &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(5)},
			wantScheduled: true, wantScheduledAt: at(5).Time,
		},
		{
			name: "Unschedulable quotes the scheduler",
			condition: &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", LastTransitionTime: at(5)},
			wantUnschedulable: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
		},
		{
			name: "Unschedulable without a message gives the reason",
			condition: &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				LastTransitionTime: at(5)},
			wantUnschedulable: corev1.PodReasonUnschedulable,
		},
		{
			name:  "False for another reason (gated) is not unschedulable",
			gates: 1,
			condition: &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated,
				Message: "waiting for scheduling gates"},
			wantGated: true,
		},
		{
			name:      "another condition type is not read",
			condition: &corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tt.node}}
			for range tt.gates {
				pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "g"})
			}
			if tt.condition != nil {
				pod.Status.Conditions = []corev1.PodCondition{*tt.condition}
			}
			s := Of(pod)
			if s.Scheduled != tt.wantScheduled || s.Node != tt.node || !s.ScheduledAt.Equal(tt.wantScheduledAt) ||
				s.Unschedulable != tt.wantUnschedulable || s.ScheduleGated != tt.wantGated {
				t.Errorf("Scheduled %v, Node %q, ScheduledAt %v, Unschedulable %q, ScheduleGated %v; want %v, %q, %v, %q, %v",
					s.Scheduled, s.Node, s.ScheduledAt, s.Unschedulable, s.ScheduleGated,
					tt.wantScheduled, tt.node, tt.wantScheduledAt, tt.wantUnschedulable, tt.wantGated)
			}
		})
	}
}

// TestOfTimes: StartedAt is the earliest start of an app container;
// FinishedAt the latest finish once every app container terminated, else,
// for an ended pod without container records, its last condition change.
func TestOfTimes(t *testing.T) {
	tests := []struct {
		name          string
		phase         corev1.PodPhase
		containers    []corev1.ContainerStatus
		init          []corev1.ContainerStatus
		conditions    []corev1.PodCondition
		wantStarted   bool
		wantStartedAt time.Time
		wantFinished  time.Time
	}{
		{name: "no container records", phase: corev1.PodPending},
		{name: "waiting containers have not started", phase: corev1.PodPending, containers: []corev1.ContainerStatus{waiting("main")}},
		{
			name: "the earliest start of running containers", phase: corev1.PodRunning,
			containers:  []corev1.ContainerStatus{running("main", 30), running("sidecar", 12)},
			wantStarted: true, wantStartedAt: at(12).Time,
		},
		{
			name: "one terminated, one running: started, not finished", phase: corev1.PodRunning,
			containers:  []corev1.ContainerStatus{terminated("init-like", 0, "Completed", 5, 9), running("main", 10)},
			wantStarted: true, wantStartedAt: at(5).Time,
		},
		{
			name: "one terminated, one waiting: not finished", phase: corev1.PodRunning,
			containers:  []corev1.ContainerStatus{terminated("main", 0, "Completed", 5, 9), waiting("sidecar")},
			wantStarted: true, wantStartedAt: at(5).Time,
		},
		{
			name: "all terminated: the latest finish", phase: corev1.PodSucceeded,
			containers: []corev1.ContainerStatus{terminated("main", 0, "Completed", 5, 60), terminated("sidecar", 0, "Completed", 3, 90),
				terminated("exporter", 0, "Completed", 4, 75)},
			wantStarted: true, wantStartedAt: at(3).Time, wantFinished: at(90).Time,
		},
		{
			name: "init containers do not date the pod", phase: corev1.PodRunning,
			init:        []corev1.ContainerStatus{terminated("gate", 0, "Completed", 1, 2)},
			containers:  []corev1.ContainerStatus{running("main", 10)},
			wantStarted: true, wantStartedAt: at(10).Time,
		},
		{
			name: "a container terminated without ever starting does not start the pod", phase: corev1.PodFailed,
			containers: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 128, Reason: "StartError", FinishedAt: at(20)}}}},
			wantFinished: at(20).Time,
		},
		{
			name: "an ended pod without container records is dated by its last condition change", phase: corev1.PodFailed,
			conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(10)},
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: at(70)},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(50)},
			},
			wantFinished: at(70).Time,
		},
		{
			name: "a pod that has not ended has no finish, whatever its conditions", phase: corev1.PodPending,
			conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(10)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Phase: tt.phase, ContainerStatuses: tt.containers,
				InitContainerStatuses: tt.init, Conditions: tt.conditions}}
			s := Of(pod)
			if s.Started != tt.wantStarted || !s.StartedAt.Equal(tt.wantStartedAt) || !s.FinishedAt.Equal(tt.wantFinished) {
				t.Errorf("Started %v, StartedAt %v, FinishedAt %v; want %v, %v, %v",
					s.Started, s.StartedAt, s.FinishedAt, tt.wantStarted, tt.wantStartedAt, tt.wantFinished)
			}
		})
	}
}

// TestOfFailure: only a Failed pod has a Failure: the first app container
// that exited non-zero, then the first such init container, else the
// pod's own reason.
func TestOfFailure(t *testing.T) {
	tests := []struct {
		name       string
		pod        corev1.PodStatus
		want       *Failure
		wantString string
	}{
		{
			name: "a running pod whose container exited non-zero has no failure yet (restartPolicy Always: restarted)",
			pod:  corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{terminated("main", 1, "Error", 1, 2)}},
		},
		{
			name: "a succeeded pod has none",
			pod:  corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{terminated("main", 0, "Completed", 1, 2)}},
		},
		{
			name: "the first app container that exited non-zero",
			pod: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("ok", 0, "Completed", 1, 2), terminated("train", 137, "OOMKilled", 1, 3), terminated("sidecar", 2, "Error", 1, 4)}},
			want: &Failure{Container: "train", ExitCode: 137, Reason: "OOMKilled", Message: "OOMKilled message",
				Exits: []ContainerExit{{Container: "train", Code: 137}, {Container: "sidecar", Code: 2}}},
			wantString: "container train exited 137, OOMKilled",
		},
		{
			name: "app containers before init containers",
			pod: corev1.PodStatus{Phase: corev1.PodFailed,
				InitContainerStatuses: []corev1.ContainerStatus{terminated("setup", 3, "Error", 1, 2)},
				ContainerStatuses:     []corev1.ContainerStatus{terminated("main", 4, "", 3, 4)}},
			want: &Failure{Container: "main", ExitCode: 4, Message: " message",
				Exits: []ContainerExit{{Container: "main", Code: 4}, {Container: "setup", Code: 3}}},
			wantString: "container main exited 4",
		},
		{
			name: "an init container, when no app container failed",
			pod: corev1.PodStatus{Phase: corev1.PodFailed,
				InitContainerStatuses: []corev1.ContainerStatus{terminated("setup", 3, "Error", 1, 2)},
				ContainerStatuses:     []corev1.ContainerStatus{waiting("main")}},
			want: &Failure{Container: "setup", ExitCode: 3, Reason: "Error", Message: "Error message",
				Exits: []ContainerExit{{Container: "setup", Code: 3}}},
			wantString: "container setup exited 3, Error",
		},
		{
			name: "no container failed: the pod's reason and message",
			pod: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
				ContainerStatuses: []corev1.ContainerStatus{running("main", 1)}},
			want:       &Failure{Reason: "Evicted", Message: "The node was low on resource: memory."},
			wantString: "Evicted",
		},
		{
			name: "failed by the pod garbage collector (its node deleted): the DisruptionTarget condition's reason and message",
			pod: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"}},
				ContainerStatuses: []corev1.ContainerStatus{running("main", 1)}},
			want: &Failure{Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists",
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue}},
			wantString: "DeletionByPodGC",
		},
		{
			name: "a preempted pod: its conditions, for failure rules",
			pod: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
				ContainerStatuses: []corev1.ContainerStatus{terminated("main", 137, "Error", 1, 2)}},
			want: &Failure{Container: "main", ExitCode: 137, Reason: "Error", Message: "Error message",
				Exits:      []ContainerExit{{Container: "main", Code: 137}},
				Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{corev1.DisruptionTarget: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionFalse}},
			wantString: "container main exited 137, Error",
		},
		{
			name: "copse's own containers are not the pod's failure: the restart agent killed at pod end (137), the gate",
			pod: corev1.PodStatus{Phase: corev1.PodFailed,
				InitContainerStatuses: []corev1.ContainerStatus{terminated(labels.RestartAgentContainer, 137, "Error", 1, 5),
					terminated(labels.StartupGateContainer, 143, "Error", 1, 5)},
				ContainerStatuses: []corev1.ContainerStatus{terminated("train", 1, "Error", 2, 4)}},
			want: &Failure{Container: "train", ExitCode: 1, Reason: "Error", Message: "Error message",
				Exits: []ContainerExit{{Container: "train", Code: 1}}},
			wantString: "container train exited 1, Error",
		},
		{
			name: "a pod only copse's containers failed in is judged on the pod's reason",
			pod: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
				InitContainerStatuses: []corev1.ContainerStatus{terminated(labels.RestartAgentContainer, 137, "Error", 1, 5)},
				ContainerStatuses:     []corev1.ContainerStatus{terminated("train", 0, "Completed", 2, 4)}},
			want:       &Failure{Reason: "Evicted"},
			wantString: "Evicted",
		},
		{
			name:       "no reason at all",
			pod:        corev1.PodStatus{Phase: corev1.PodFailed},
			want:       &Failure{},
			wantString: "failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(&corev1.Pod{Status: tt.pod}).Failure
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Failure (-want +got):\n%s", diff)
			}
			if got != nil && got.String() != tt.wantString {
				t.Errorf("String() = %q, want %q", got.String(), tt.wantString)
			}
		})
	}
}

// TestSummaryStates: what each phase, terminating or not, counts as.
func TestSummaryStates(t *testing.T) {
	tests := []struct {
		phase       corev1.PodPhase
		terminating bool
		// want: terminal, succeeded, failed, active, holdsNode.
		terminal, succeeded, failed, active, holdsNode bool
	}{
		{phase: corev1.PodPending, active: true, holdsNode: true},
		{phase: corev1.PodRunning, active: true, holdsNode: true},
		{phase: corev1.PodRunning, terminating: true, holdsNode: true},
		{phase: corev1.PodUnknown, active: true, holdsNode: true},
		{phase: corev1.PodSucceeded, terminal: true, succeeded: true},
		{phase: corev1.PodSucceeded, terminating: true, terminal: true, succeeded: true},
		{phase: corev1.PodFailed, terminal: true, failed: true},
		{phase: corev1.PodFailed, terminating: true, terminal: true, failed: true},
	}
	for _, tt := range tests {
		s := Summary{Phase: tt.phase, Terminating: tt.terminating}
		got := []bool{s.Terminal(), s.Succeeded(), s.Failed(), s.Active(), s.HoldsNode()}
		want := []bool{tt.terminal, tt.succeeded, tt.failed, tt.active, tt.holdsNode}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s, terminating %v: [Terminal Succeeded Failed Active HoldsNode] (-want +got):\n%s", tt.phase, tt.terminating, diff)
		}
	}
}

// TestEndedInEarlierAttempt: a pod a restart in place moved that ended
// before the kubelet restarted its containers (restart count as at the
// move) ended the previous attempt's process, whatever its phase; once
// restarted, or never moved, its outcome is its own attempt's.
func TestEndedInEarlierAttempt(t *testing.T) {
	moved := func(phase corev1.PodPhase, restarts string, status ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{labels.RestartsAtMoveAnnotation: restarts}},
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: status},
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"old process failed before the restart", moved(corev1.PodFailed, "0", terminated("main", 1, "Error", 10, 20)), true},
		{"old process exited 0 before the restart", moved(corev1.PodSucceeded, "0", terminated("main", 0, "Completed", 10, 20)), true},
		{"moved at its second restart, failed before the third", moved(corev1.PodFailed, "1", restarted(terminated("main", 1, "Error", 10, 20), 1)), true},
		{"failed after the kubelet restarted it", moved(corev1.PodFailed, "0", restarted(terminated("main", 1, "Error", 10, 20), 1)), false},
		{"still running the old process", moved(corev1.PodRunning, "0", running("main", 10)), false},
		{"the agent's restarts are not the app's", moved(corev1.PodFailed, "0", terminated("main", 1, "Error", 10, 20), restarted(running(labels.RestartAgentContainer, 5), 1)), true},
		{"never moved", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{terminated("main", 1, "Error", 10, 20)}}}, false},
		{"a malformed annotation is no move", moved(corev1.PodFailed, "x", terminated("main", 1, "Error", 10, 20)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.pod).EndedInEarlierAttempt(); got != tt.want {
				t.Errorf("EndedInEarlierAttempt() = %v, want %v (summary %+v)", got, tt.want, Of(tt.pod))
			}
		})
	}
}

// TestOfDisrupted: a pod being deleted with DisruptionTarget=True, not yet
// ended, is disrupted, with the condition's reason and time; an ended one,
// or one deleted without the condition, is not.
func TestOfDisrupted(t *testing.T) {
	now := metav1.Now()
	evicted := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: at(30)}
	tests := []struct {
		name    string
		pod     corev1.Pod
		want    bool
		wantWhy string
	}{
		{"being evicted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{evicted}}}, true, "EvictionByEvictionAPI"},
		{"deleted without the condition", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false, ""},
		{"marked, not deleted yet", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{evicted}}}, false, ""},
		{"ended: a failure, not a disruption", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{evicted}}}, false, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Of(&tt.pod)
			if s.Disrupted != tt.want {
				t.Fatalf("Disrupted %v, want %v", s.Disrupted, tt.want)
			}
			if tt.want && (!s.DisruptedAt.Equal(at(30).Time) || s.Failure == nil || s.Failure.Reason != tt.wantWhy ||
				s.Failure.Conditions[corev1.DisruptionTarget] != corev1.ConditionTrue) {
				t.Errorf("DisruptedAt %v, Failure %+v", s.DisruptedAt, s.Failure)
			}
			if tt.wantWhy == "failed" && (s.Failure == nil || s.Failure.Conditions[corev1.DisruptionTarget] != corev1.ConditionTrue) {
				t.Errorf("an ended pod keeps its conditions for the rules: %+v", s.Failure)
			}
		})
	}
}

// TestPhaseOf: the phase a real kubelet is about to write once every
// regular container has terminated, which it writes an update after the
// container statuses (seen on a real node, e2e/realnode); otherwise the
// pod's own phase.
func TestGateHolding(t *testing.T) {
	gate := func(state corev1.ContainerState) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: labels.StartupGateContainer, State: state}}
	}
	tests := []struct {
		name       string
		annotation string
		statuses   []corev1.ContainerStatus
		want       bool
	}{
		{"no gate", "", nil, false},
		{"a gate not started yet holds", "closed", nil, true},
		{"a waiting gate holds", "closed", gate(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}), true},
		{"a running gate holds", "closed", gate(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}), true},
		{"a gate that completed holds no more", "closed", gate(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: tt.statuses}}
			if tt.annotation != "" {
				pod.Annotations = map[string]string{labels.StartupGateAnnotation: tt.annotation}
			}
			if got := Of(pod).GateHolding; got != tt.want {
				t.Errorf("GateHolding %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPhaseOf(t *testing.T) {
	two := []corev1.Container{{Name: "a"}, {Name: "b"}}
	one := []corev1.Container{{Name: "main"}}
	tests := []struct {
		name     string
		policy   corev1.RestartPolicy
		phase    corev1.PodPhase
		spec     []corev1.Container
		statuses []corev1.ContainerStatus
		want     corev1.PodPhase
	}{
		{"Never, the only container exited 3: Failed", corev1.RestartPolicyNever, corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}, corev1.PodFailed},
		{"Never, every container exited 0: Succeeded", corev1.RestartPolicyNever, corev1.PodRunning, two,
			[]corev1.ContainerStatus{terminated("a", 0, "Completed", 1, 2), terminated("b", 0, "Completed", 1, 3)}, corev1.PodSucceeded},
		{"Never, one exited 0, one exited 1: Failed", corev1.RestartPolicyNever, corev1.PodRunning, two,
			[]corev1.ContainerStatus{terminated("a", 0, "Completed", 1, 2), terminated("b", 1, "Error", 1, 3)}, corev1.PodFailed},
		{"Never, one still runs: Running", corev1.RestartPolicyNever, corev1.PodRunning, two,
			[]corev1.ContainerStatus{terminated("a", 3, "Error", 1, 2), running("b", 1)}, corev1.PodRunning},
		{"Never, a container not reported yet: Running", corev1.RestartPolicyNever, corev1.PodRunning, two,
			[]corev1.ContainerStatus{terminated("a", 0, "Completed", 1, 2)}, corev1.PodRunning},
		{"OnFailure, exited 0: Succeeded", corev1.RestartPolicyOnFailure, corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 0, "Completed", 1, 2)}, corev1.PodSucceeded},
		{"OnFailure, exited 3: Running, the kubelet restarts it", corev1.RestartPolicyOnFailure, corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}, corev1.PodRunning},
		{"Always, exited 0: Running", corev1.RestartPolicyAlways, corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 0, "Completed", 1, 2)}, corev1.PodRunning},
		{"unset policy (Always once defaulted): Running", "", corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}, corev1.PodRunning},
		{"Pending stays Pending", corev1.RestartPolicyNever, corev1.PodPending, one,
			[]corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}, corev1.PodPending},
		{"the kubelet's own terminal phase stands", corev1.RestartPolicyNever, corev1.PodFailed, one,
			[]corev1.ContainerStatus{terminated("main", 0, "Completed", 1, 2)}, corev1.PodFailed},
		{"Never, stopped to restart every container in place: Running", corev1.RestartPolicyNever, corev1.PodRunning, one,
			[]corev1.ContainerStatus{terminated("main", 137, ReasonRestartingAllContainers, 1, 2)}, corev1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec:   corev1.PodSpec{RestartPolicy: tt.policy, Containers: tt.spec},
				Status: corev1.PodStatus{Phase: tt.phase, ContainerStatuses: tt.statuses},
			}
			if got := Of(pod).Phase; got != tt.want {
				t.Errorf("phase %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("a container with a restart policy of its own leaves the phase to the kubelet", func(t *testing.T) {
		pod := &corev1.Pod{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}},
		}
		if got := Of(pod).Phase; got != corev1.PodRunning {
			t.Errorf("phase %s, want Running", got)
		}
	})
	t.Run("a pod whose containers all restart in place is not ending", func(t *testing.T) {
		pod := &corev1.Pod{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: one},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{terminated("main", 0, "Completed", 1, 2)}},
		}
		if got := Of(pod).Phase; got != corev1.PodRunning {
			t.Errorf("phase %s, want Running", got)
		}
	})
	t.Run("the inferred failure is described like the kubelet's", func(t *testing.T) {
		pod := &corev1.Pod{
			Spec:   corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: one},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{terminated("main", 3, "Error", 1, 2)}},
		}
		s := Of(pod)
		if s.Failure == nil || s.Failure.String() != "container main exited 3, Error" {
			t.Errorf("failure %v", s.Failure)
		}
		if !s.Terminal() || !s.FinishedAt.Equal(at(2).Time) {
			t.Errorf("terminal %v, finishedAt %v", s.Terminal(), s.FinishedAt)
		}
	})
}
