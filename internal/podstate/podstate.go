// Package podstate reduces a pod to the plain values copse's decisions need:
// where it sits (PodClique, index, replica, attempt), how far it got
// (scheduled, started, ready, ended) and, when it failed, why. Both the
// PodClique and the PodCliqueSet controller read pods through it, so a
// pod's state and its failure are described in one place.
package podstate

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// Summary is one pod as copse's decisions see it.
type Summary struct {
	Name string
	UID  types.UID
	// PodClique is the pod's PodClique (labels.PodCliqueKey).
	PodClique string
	// Index is the pod's place in its clique (labels.PodIndexKey);
	// HasIndex is false when the label is absent or malformed.
	Index    int
	HasIndex bool
	// Replica is the PodCliqueSet replica (labels.ReplicaKey), -1 if unknown.
	Replica int
	// Attempt is the run of the replica the pod belongs to (labels.AttemptKey).
	Attempt int
	Phase   corev1.PodPhase
	// Terminating is true once the pod has a deletion timestamp;
	// DeletionDeadline is that timestamp, when its grace period ends.
	Terminating      bool
	DeletionDeadline time.Time
	Node             string
	Scheduled        bool
	// ScheduledAt is when the pod's PodScheduled condition turned True
	// (zero when unknown or not scheduled).
	ScheduledAt time.Time
	// Unschedulable is the scheduler's message while the pod's
	// PodScheduled condition is False with reason Unschedulable; "" else.
	Unschedulable string
	ScheduleGated bool
	// Started: a container has started (it runs, or ran and ended).
	// StartedAt is the earliest container start.
	Started   bool
	StartedAt time.Time
	Ready     bool
	// StartupGate is the pod's startup gate state (labels.StartupGateAnnotation):
	// "closed", "open", or "" for a pod without a gate.
	StartupGate string
	// GateHolding: the pod has a startup gate and its containers are held
	// there: the gate init container has not completed (it waits, or has
	// not started yet). After a restart in place the kubelet runs the gate
	// again, so a pod adopted into a new attempt holds there once its old
	// containers are gone.
	GateHolding bool
	// GPUs is the nvidia.com/gpu the pod requests (its effective request:
	// the larger of its init containers' and its containers' with sidecars).
	GPUs int64
	// FinishedAt is when the last container of an ended pod terminated
	// (zero when unknown or not ended).
	FinishedAt time.Time
	// Failure says why a Failed pod failed, or why a disrupted one is
	// going (Disrupted); nil for other pods.
	Failure *Failure
	// Disrupted: the pod has not ended but is being deleted with the
	// condition DisruptionTarget=True (preempted, evicted, its node gone);
	// DisruptedAt is when the condition was set. Its Failure has the
	// condition's reason and the pod's conditions, no exit codes yet.
	Disrupted   bool
	DisruptedAt time.Time
	// ContainerRestarts is how often the kubelet restarted the pod's app
	// containers (the most of any; each restart in place restarts them all
	// once). Moved: a restart in place moved the pod to its attempt, when
	// the count was RestartsAtMove (labels.RestartsAtMoveAnnotation).
	ContainerRestarts int32
	Moved             bool
	RestartsAtMove    int32
	// HasOutcomeFinalizer: the pod carries copsev1alpha1.OutcomeFinalizer.
	HasOutcomeFinalizer bool
	// ControllerUID is the UID of the pod's controller owner, if any.
	ControllerUID types.UID
	// TemplateHash is the hash of the pod template the pod was made from
	// (labels.PodTemplateHashKey); "" for a pod made before copse set it.
	TemplateHash string
	// Gang is the gang the pod's PodClique put it in (labels.PodGangKey).
	Gang string
}

// Failure is why a pod failed: the first container that terminated with a
// non-zero exit code, or the pod's own reason (e.g. Evicted).
type Failure struct {
	Container string
	// ExitCode is meaningful only when Container is set.
	ExitCode int32
	Reason   string
	Message  string
	// Exits are the exit codes of every container (app, then init) that
	// terminated with a non-zero code; failure rules match them.
	Exits []ContainerExit
	// Conditions are the pod's conditions by type (DisruptionTarget, ...);
	// failure rules match them.
	Conditions map[corev1.PodConditionType]corev1.ConditionStatus
}

// ContainerExit is one container's non-zero exit code.
type ContainerExit struct {
	Container string
	Code      int32
}

// String is e.g. "container train exited 137, OOMKilled", or "Evicted".
func (f Failure) String() string {
	if f.Container == "" {
		if f.Reason == "" {
			return "failed"
		}
		return f.Reason
	}
	out := fmt.Sprintf("container %s exited %d", f.Container, f.ExitCode)
	if f.Reason != "" {
		out += ", " + f.Reason
	}
	return out
}

// Terminal reports whether the pod's containers have all stopped for good.
func (s Summary) Terminal() bool {
	return s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
}

// Succeeded reports whether every container exited 0 (phase Succeeded).
// That stays true while the pod is being deleted.
func (s Summary) Succeeded() bool { return s.Phase == corev1.PodSucceeded }

// Failed reports whether the pod ended in failure (phase Failed).
func (s Summary) Failed() bool { return s.Phase == corev1.PodFailed }

// EndedInEarlierAttempt reports whether the pod ended with processes that
// started before the restart in place that moved it to its attempt: no app
// container restarted since the move (the kubelet had not restarted the
// pod yet when its old process exited, typically a rank that lost its
// peer). Its outcome, failure or exit 0, is the previous attempt's.
func (s Summary) EndedInEarlierAttempt() bool {
	return s.Terminal() && s.Moved && s.ContainerRestarts <= s.RestartsAtMove
}

// ContainerRestarts is how often the kubelet restarted the pod's app
// containers: the most of any. copse's own (labels.IsCopseContainer) are
// left out, as from every outcome podstate reads.
func ContainerRestarts(pod *corev1.Pod) int32 {
	var most int32
	for _, cs := range pod.Status.ContainerStatuses {
		if !labels.IsCopseContainer(cs.Name) {
			most = max(most, cs.RestartCount)
		}
	}
	return most
}

// restartsAtMove reads labels.RestartsAtMoveAnnotation; moved is false
// when it is absent or malformed.
func restartsAtMove(pod *corev1.Pod) (restarts int32, moved bool) {
	v, err := strconv.ParseInt(pod.Annotations[labels.RestartsAtMoveAnnotation], 10, 32)
	if err != nil || v < 0 {
		return 0, false
	}
	return int32(v), true
}

// Active reports whether the pod is, or may become, a running member of its
// clique: it neither ended nor is being deleted.
func (s Summary) Active() bool { return !s.Terminal() && !s.Terminating }

// HoldsNode reports whether the pod may still hold its node's resources:
// it has not ended (terminating pods included).
func (s Summary) HoldsNode() bool { return !s.Terminal() }

// Of summarises a pod.
func Of(pod *corev1.Pod) Summary {
	index, hasIndex := labels.Index(pod.Labels, labels.PodIndexKey)
	replica, ok := labels.Index(pod.Labels, labels.ReplicaKey)
	if !ok {
		replica = -1
	}
	attempt, _ := labels.Index(pod.Labels, labels.AttemptKey)
	s := Summary{
		Name:              pod.Name,
		UID:               pod.UID,
		PodClique:         pod.Labels[labels.PodCliqueKey],
		Index:             index,
		HasIndex:          hasIndex,
		Replica:           replica,
		Attempt:           attempt,
		Phase:             phaseOf(pod),
		Terminating:       pod.DeletionTimestamp != nil,
		Node:              pod.Spec.NodeName,
		Scheduled:         pod.Spec.NodeName != "",
		ScheduleGated:     len(pod.Spec.SchedulingGates) > 0,
		Ready:             podReady(pod),
		StartupGate:       pod.Annotations[labels.StartupGateAnnotation],
		GateHolding:       gateHolding(pod),
		TemplateHash:      pod.Labels[labels.PodTemplateHashKey],
		Gang:              pod.Labels[labels.PodGangKey],
		GPUs:              GPUsOf(pod),
		ContainerRestarts: ContainerRestarts(pod),
	}
	s.RestartsAtMove, s.Moved = restartsAtMove(pod)
	if pod.DeletionTimestamp != nil {
		s.DeletionDeadline = pod.DeletionTimestamp.Time
	}
	for _, f := range pod.Finalizers {
		if f == copsev1alpha1.OutcomeFinalizer {
			s.HasOutcomeFinalizer = true
		}
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			s.ControllerUID = ref.UID
		}
	}
	s.ScheduledAt, s.Unschedulable = scheduling(pod)
	s.StartedAt, s.FinishedAt = containerTimes(pod)
	s.Started = !s.StartedAt.IsZero()
	if s.FinishedAt.IsZero() && s.Terminal() {
		// A pod that ended without container records (evicted before its
		// containers started, say) is dated by its last condition change, a
		// fixed time, so decisions that count from the end do not drift.
		s.FinishedAt = lastConditionChange(pod)
	}
	switch {
	case s.Phase == corev1.PodFailed:
		f := failureOf(pod)
		f.Exits = exitsOf(pod)
		f.Conditions = conditionsOf(pod)
		s.Failure = &f
	case s.Terminating && !s.Terminal():
		if c := disruption(pod); c != nil {
			s.Disrupted, s.DisruptedAt = true, c.LastTransitionTime.Time
			s.Failure = &Failure{Reason: c.Reason, Message: c.Message, Conditions: conditionsOf(pod)}
		}
	}
	return s
}

// phaseOf is the pod's phase, or the one its kubelet is about to write.
// A real kubelet reports a pod's last container terminated in one status
// update (phase still Running, Ready False) and the pod's terminal phase in
// the next, a moment later; read alone, the first looks like a running pod
// that lost its readiness, which a gang would count as a breach rather than
// as the success or failure it is. So, as the kubelet's own phase rule
// does: once every regular container has terminated and none will be
// restarted, the pod has Succeeded when all exited 0, and Failed otherwise
// under restartPolicy Never. A container with a restart policy of its own
// (container restart rules), or a restart of every container in place,
// leaves the phase to the kubelet.
func phaseOf(pod *corev1.Pod) corev1.PodPhase {
	phase := pod.Status.Phase
	// An unset policy is Always: the API server defaults it so.
	if phase != corev1.PodRunning || pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" ||
		len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) || len(pod.Spec.Containers) == 0 {
		return phase
	}
	for _, c := range pod.Spec.Containers {
		if c.RestartPolicy != nil {
			return phase
		}
	}
	if restartingAllContainers(pod) {
		return phase
	}
	allZero := true
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			return phase
		}
		allZero = allZero && t.ExitCode == 0
	}
	switch {
	case allZero:
		return corev1.PodSucceeded
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	default:
		return phase // OnFailure: the kubelet restarts the failed containers
	}
}

// gateHolding reports whether the pod's startup gate holds its containers:
// it has the gate, and the gate init container has not terminated (with no
// status of the gate yet: no other container has started either).
func gateHolding(pod *corev1.Pod) bool {
	if pod.Annotations[labels.StartupGateAnnotation] == "" {
		return false
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == labels.StartupGateContainer {
			return cs.State.Terminated == nil
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return false
		}
	}
	return true
}

// restartingAllContainers reports whether the kubelet is restarting every
// container of the pod in place (RestartAllContainers): the pod's
// AllContainersRestarting condition is True, or a container was stopped
// for it. Its containers look terminated, and the pod is not ending.
func restartingAllContainers(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == ReasonRestartingAllContainers {
			return true
		}
	}
	return false
}

// ReasonRestartingAllContainers is the reason the kubelet gives a container
// it stops to restart every container of its pod in place.
const ReasonRestartingAllContainers = "RestartingAllContainers"

// disruption is the pod's DisruptionTarget condition when it is True.
func disruption(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// exitsOf lists the non-zero exit codes of the pod's terminated
// containers, app containers first, then init containers.
func exitsOf(pod *corev1.Pod) []ContainerExit {
	var out []ContainerExit
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && !labels.IsCopseContainer(cs.Name) {
				out = append(out, ContainerExit{Container: cs.Name, Code: t.ExitCode})
			}
		}
	}
	return out
}

// conditionsOf is the pod's conditions by type.
func conditionsOf(pod *corev1.Pod) map[corev1.PodConditionType]corev1.ConditionStatus {
	if len(pod.Status.Conditions) == 0 {
		return nil
	}
	out := make(map[corev1.PodConditionType]corev1.ConditionStatus, len(pod.Status.Conditions))
	for _, c := range pod.Status.Conditions {
		out[c.Type] = c.Status
	}
	return out
}

// scheduling reads the pod's PodScheduled condition: when it turned True,
// or the scheduler's message while it is False for want of room.
func scheduling(pod *corev1.Pod) (time.Time, string) {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		switch {
		case c.Status == corev1.ConditionTrue:
			return c.LastTransitionTime.Time, ""
		case c.Reason == corev1.PodReasonUnschedulable:
			msg := c.Message
			if msg == "" {
				msg = c.Reason
			}
			return time.Time{}, msg
		}
	}
	return time.Time{}, ""
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerTimes returns the earliest start of any app container (running or
// terminated) and, when every app container terminated, the latest finish.
func containerTimes(pod *corev1.Pod) (startedAt, finishedAt time.Time) {
	allTerminated := len(pod.Status.ContainerStatuses) > 0
	for _, cs := range pod.Status.ContainerStatuses {
		var start time.Time
		switch {
		case cs.State.Running != nil:
			start = cs.State.Running.StartedAt.Time
			allTerminated = false
		case cs.State.Terminated != nil:
			start = cs.State.Terminated.StartedAt.Time
			if end := cs.State.Terminated.FinishedAt.Time; end.After(finishedAt) {
				finishedAt = end
			}
		default:
			allTerminated = false
		}
		if !start.IsZero() && (startedAt.IsZero() || start.Before(startedAt)) {
			startedAt = start
		}
	}
	if !allTerminated {
		finishedAt = time.Time{}
	}
	return startedAt, finishedAt
}

// failureOf describes why a Failed pod failed: the first container (app
// containers before init containers) that terminated with a non-zero exit
// code; without one, the pod's reason and message, or, when it has none
// (the pod garbage collector fails a pod whose node was deleted with only
// a DisruptionTarget condition), that condition's.
func failureOf(pod *corev1.Pod) Failure {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range statuses {
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || labels.IsCopseContainer(cs.Name) {
				continue
			}
			return Failure{Container: cs.Name, ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message}
		}
	}
	if c := disruption(pod); pod.Status.Reason == "" && c != nil {
		return Failure{Reason: c.Reason, Message: c.Message}
	}
	return Failure{Reason: pod.Status.Reason, Message: pod.Status.Message}
}

func lastConditionChange(pod *corev1.Pod) time.Time {
	var latest time.Time
	for _, c := range pod.Status.Conditions {
		if c.LastTransitionTime.After(latest) {
			latest = c.LastTransitionTime.Time
		}
	}
	return latest
}

// GPUsOf is the nvidia.com/gpu pod requests: its effective request, the
// larger of its init containers' and its containers' with sidecars.
func GPUsOf(pod *corev1.Pod) int64 {
	if !mnnvl.RequestsGPUs(&pod.Spec) {
		return 0 // most pods: no need to add up every container's requests
	}
	gpus := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[mnnvl.GPUResource]
	return gpus.Value()
}
