package kueue

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// Step is one write of the protocol; a pass takes at most one, and the
// next pass, woken by the write, takes the next.
type Step string

const (
	// StepNone: nothing to write; wait for Kueue, the pods or the user.
	StepNone Step = ""
	// StepCreateWorkload creates Decision.Workload.
	StepCreateWorkload Step = "CreateWorkload"
	// StepDeleteWorkload deletes Decision.Workload, which no longer matches
	// the PodCliqueSet; the next pass creates the one that does.
	StepDeleteWorkload Step = "DeleteWorkload"
	// StepStart updates the PodCliqueSet to Decision.PodCliqueSet: the
	// admission merged into its clique templates and spec.suspend false.
	StepStart Step = "Start"
	// StepStop updates the PodCliqueSet to Decision.PodCliqueSet, suspended.
	StepStop Step = "Stop"
	// StepRestore updates the PodCliqueSet to Decision.PodCliqueSet, its
	// clique templates as they were before the admission.
	StepRestore Step = "Restore"
	// StepClearReservation writes Decision.Workload's status: the quota of
	// an evicted Workload given back, the Workload queued again.
	StepClearReservation Step = "ClearReservation"
	// StepFinishWorkload writes Decision.Workload's status: Finished.
	StepFinishWorkload Step = "FinishWorkload"
	// StepSetPodsReady writes Decision.Workload's status: PodsReady.
	StepSetPodsReady Step = "SetPodsReady"
	// StepRemoveFinalizer updates Decision.Workload: Kueue's finalizer
	// kueue.x-k8s.io/resource-in-use removed, so that the Workload, and the
	// quota it holds, may go.
	StepRemoveFinalizer Step = "RemoveFinalizer"
)

// Event reasons on the PodCliqueSet.
const (
	EventAdmitted        = "Admitted"
	EventEvicted         = "Evicted"
	EventRequeued        = "Requeued"
	EventWorkloadRefused = "WorkloadRefused"
)

// Event is an event to record on the PodCliqueSet once the step is written.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Inputs are everything Decide reads, gathered by the reconciler.
type Inputs struct {
	// PodCliqueSet is the PodCliqueSet of the pass, nil when it is gone.
	// Without the label kueue.x-k8s.io/queue-name it has left its queue.
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	// Workload is the PodCliqueSet's Workload (WorkloadName, controlled by
	// it); nil when there is none.
	Workload *kueue.Workload
	// WorkloadNameTaken: a Workload of that name exists but another object
	// controls it (an earlier PodCliqueSet of the same name, not yet
	// garbage collected). Workload is nil then.
	WorkloadNameTaken bool
	// Orphan is the Workload of WorkloadName whose controller is a
	// PodCliqueSet of this name that is gone (Orphaned): PodCliqueSet is
	// nil, or is a new PodCliqueSet of the same name (WorkloadNameTaken is
	// then true).
	Orphan *kueue.Workload
	// Priority is the Workload's priority (ResolvePriority), or the error
	// that it cannot be resolved.
	Priority    Priority
	PriorityErr error
	// Topology is each clique's topology request (PodSets); nil for none.
	Topology map[string]*kueue.PodSetTopologyRequest
	// TopologyErr is the packing Kueue cannot express (TopologyRequests):
	// no Workload is built while it is set.
	TopologyErr error
	// Flavors are the ResourceFlavors the Workload's admission names, as
	// read; a missing one is absent.
	Flavors Flavors
	// Refusal is the API server's refusal of the last creation of the
	// Workload, as the kueueworkload controller recorded it on the
	// PodCliqueSet (WorkloadRefusedAnnotation); "" for none.
	Refusal string
	// PodsRemain: the PodCliqueSet still has a pod that has not ended, or
	// its status.startTime is set (the PodCliqueSet controller clears it
	// once a suspension has removed every pod; the Training webhook lets
	// clique templates change only then).
	PodsRemain bool
	// MaxPodSets is the most pod sets a Workload of the Kueue in use may
	// have (ServedMaxPodSets); 0 for DefaultMaxPodSets.
	MaxPodSets int
	Now        time.Time
}

// Decision is the step of one pass and the PodCliqueSet's Admitted
// condition after it.
type Decision struct {
	Step Step
	// PodCliqueSet is the PodCliqueSet to write (Start, Stop, Restore).
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	// Workload is the Workload to create or delete, or the one whose status
	// to write.
	Workload *kueue.Workload
	// Admitted is the PodCliqueSet's Admitted condition once the step is
	// written.
	Admitted metav1.Condition
	// RemoveAdmitted: the PodCliqueSet left its queue and its Workload is
	// gone; its Admitted condition is removed rather than written.
	RemoveAdmitted bool
	// Event, if not nil, is recorded on the PodCliqueSet once the step is
	// written.
	Event *Event
	// Why says, for the log, what led to the step.
	Why string
	// RetryAfter, when positive, asks for another pass after it: the
	// decision waits on something no watch reports (a ResourceFlavor, a
	// Workload of another owner going away).
	RetryAfter time.Duration
}

// retryWait is how long a pass waits for what no watch wakes it for.
const retryWait = 10 * time.Second

// Decide is the next step of Kueue's Workload protocol for a PodCliqueSet
// (docs/kueue.md), the order of Kueue's own job reconciler
// (jobframework.ReconcileGenericJob): a Workload whose PodCliqueSet is gone
// or being deleted, or that is finished, is released (its finalizer
// removed); a finished PodCliqueSet finishes its Workload; a Workload being
// deleted, or one that no longer matches, stops a running PodCliqueSet, and
// once its pods are gone its templates are restored from that Workload
// before it is released or deleted; without a Workload, a Workload is
// created once the pods are gone; then PodsReady is kept current; an
// evicted Workload stops the PodCliqueSet, and once its pods are gone gets
// its templates restored and its reservation cleared; a suspended
// PodCliqueSet starts when its Workload is admitted; a running one whose
// Workload is not admitted is stopped.
func Decide(in Inputs) Decision {
	pcs, wl := in.PodCliqueSet, in.Workload
	var d Decision
	if pcs != nil {
		d.Admitted = admittedCondition(pcs, wl, in.Now)
	}
	if in.Orphan != nil && holdsFinalizer(in.Orphan) {
		if pcs != nil {
			// The name stays taken until the Workload has gone.
			d.Admitted = nameTaken(pcs, in.Now)
			d.RetryAfter = retryWait
		}
		return d.release(in.Orphan, fmt.Sprintf("Workload %s belongs to a PodCliqueSet that is gone", in.Orphan.Name))
	}
	if pcs == nil {
		return d.because("the PodCliqueSet is gone")
	}
	name := WorkloadName(pcs.Name)
	running := !pcs.IsSuspended()

	if !pcs.DeletionTimestamp.IsZero() {
		if wl == nil {
			return d.because("the PodCliqueSet is being deleted")
		}
		return d.release(wl, "the PodCliqueSet is being deleted; its Workload goes with it")
	}
	if QueueName(pcs) == "" {
		return d.leave(in)
	}
	if wl != nil && IsFinished(wl) {
		return d.release(wl, "the Workload is finished")
	}
	if pcs.Status.Phase.IsTerminal() {
		if wl == nil {
			return d.because("the PodCliqueSet has ended")
		}
		reason, message := finishedReason(pcs)
		d.Step, d.Workload = StepFinishWorkload, Finish(wl, reason, message, in.Now)
		return d.because("the PodCliqueSet has ended " + string(pcs.Status.Phase))
	}
	if lifecycle.WorkloadEnded(pcs) {
		return d.because("the PodCliqueSet's outcome is decided; its pods are going")
	}

	podSets, err := PodSets(pcs, in.Topology, in.MaxPodSets)
	if err == nil {
		err = in.TopologyErr
	}
	if err != nil {
		d.Admitted = refused(pcs, fmt.Sprintf("copse cannot build Workload %s: %v", name, err), in.Now)
		if running {
			return d.stop(pcs, "the PodCliqueSet cannot be queued: "+err.Error())
		}
		return d.because("no Workload can be built: " + err.Error())
	}

	switch {
	case wl == nil && in.WorkloadNameTaken:
		d.Admitted = nameTaken(pcs, in.Now)
		d.RetryAfter = retryWait
		if running {
			return d.stop(pcs, "its Workload's name is taken")
		}
		return d.because("the Workload's name is taken")
	case wl == nil:
		return d.withoutWorkload(in, podSets)
	case !wl.DeletionTimestamp.IsZero():
		why := fmt.Sprintf("Workload %s is being deleted", name)
		d.Admitted = pending(pcs, why+"; the PodCliqueSet queues again with a new one once the pods of its run are gone", in.Now)
		if running {
			return d.stop(pcs, why)
		}
		return d.stopped(in, why)
	}

	want := BuildWorkload(pcs, podSets, in.Priority)
	if in.PriorityErr != nil {
		// A class that went away changes nothing of a Workload made with it.
		want.Spec.PriorityClassRef, want.Spec.Priority = wl.Spec.PriorityClassRef, wl.Spec.Priority
	}
	if mismatch := Mismatch(want, wl, !CarriesAdmission(pcs, wl), HasQuotaReservation(wl)); mismatch != "" {
		return d.mismatched(in, mismatch)
	}

	ready := running && pcs.Spec.Replicas > 0 && pcs.Status.AvailableReplicas >= pcs.Spec.Replicas
	podsReady := PodsReadyCondition(wl, ready, in.Now)
	if current := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadPodsReady); current == nil ||
		current.Status != podsReady.Status || current.Reason != podsReady.Reason {
		d.Step, d.Workload = StepSetPodsReady, WithPodsReady(wl, podsReady)
		return d.because(fmt.Sprintf("PodsReady becomes %s (%s)", podsReady.Status, podsReady.Reason))
	}

	eviction := Eviction(wl)
	if running {
		switch {
		case eviction != nil:
			return d.stop(pcs, evictedBecause(wl, *eviction))
		case !IsAdmitted(wl):
			return d.stop(pcs, fmt.Sprintf("Workload %s is not admitted", name))
		}
		return d.because("running, admitted")
	}
	if in.PodsRemain {
		return d.because("suspended; waiting for the pods of the previous run to go")
	}
	if CarriesAdmission(pcs, wl) {
		return d.restore(pcs, wl, "suspended with an admission merged into its templates")
	}
	if eviction != nil {
		if !HasQuotaReservation(wl) {
			return d.because(evictedBecause(wl, *eviction) + "; queued again")
		}
		d.Step, d.Workload = StepClearReservation, ClearReservation(wl, *eviction, in.Now)
		d.Admitted = admittedCondition(pcs, d.Workload, in.Now)
		d.Event = &Event{Reason: EventRequeued, Message: fmt.Sprintf("Workload %s gave its quota back and queues again (%s)", wl.Name, eviction.Reason)}
		return d.because(evictedBecause(wl, *eviction) + "; its pods are gone")
	}
	if !IsAdmitted(wl) {
		return d.because("waiting for Kueue to admit the Workload")
	}
	return d.start(in)
}

func nameTaken(pcs *copsev1alpha1.PodCliqueSet, now time.Time) metav1.Condition {
	return pending(pcs, fmt.Sprintf("Workload %s belongs to another object (an earlier PodCliqueSet of this name?); waiting for it to go",
		WorkloadName(pcs.Name)), now)
}

// stopped: the Workload is going (being deleted) under a stopped
// PodCliqueSet. Its finalizer keeps it, and its quota, until the pods of
// the run are gone and the templates restored from it; then it is released.
func (d Decision) stopped(in Inputs, why string) Decision {
	pcs, wl := in.PodCliqueSet, in.Workload
	switch {
	case in.PodsRemain:
		return d.because(why + "; waiting for the pods of its run to go")
	case CarriesAdmission(pcs, wl):
		return d.restore(pcs, wl, why)
	}
	return d.release(wl, why+"; its pods are gone and the templates restored")
}

// leave: the PodCliqueSet left its queue (the label was removed while it
// was suspended). Its Workload is deleted, and released once the pods of
// the last run are gone and the templates restored; then the Admitted
// condition goes. A PodCliqueSet its user resumed meanwhile runs outside
// Kueue: it is not stopped, and the Workload is released at once.
func (d Decision) leave(in Inputs) Decision {
	pcs, wl := in.PodCliqueSet, in.Workload
	if wl == nil {
		d.RemoveAdmitted = true
		return d.because("the PodCliqueSet left its queue; it has no Workload")
	}
	why := fmt.Sprintf("the PodCliqueSet left LocalQueue %s", wl.Spec.QueueName)
	d.Admitted = pending(pcs, why+fmt.Sprintf("; Workload %s is deleted once the pods of its last run are gone", wl.Name), in.Now)
	switch {
	case wl.DeletionTimestamp.IsZero():
		d.Step, d.Workload = StepDeleteWorkload, wl
		return d.because(why)
	case !pcs.IsSuspended():
		return d.release(wl, why+" and runs without it")
	}
	return d.stopped(in, why)
}

// release removes Kueue's finalizer from wl, once nothing of the
// PodCliqueSet needs it: the Workload, and its quota, may go. A Workload
// without it (created before copse set it) needs nothing.
func (d Decision) release(wl *kueue.Workload, why string) Decision {
	if !holdsFinalizer(wl) {
		return d.because(why)
	}
	d.Step, d.Workload = StepRemoveFinalizer, withoutFinalizer(wl)
	return d.because(why + "; released")
}

func evictedBecause(wl *kueue.Workload, eviction metav1.Condition) string {
	return fmt.Sprintf("Kueue evicted Workload %s (%s): %s", wl.Name, eviction.Reason, eviction.Message)
}

// withoutWorkload: a running PodCliqueSet without a Workload is stopped;
// a suspended one gets its Workload once its pods are gone.
func (d Decision) withoutWorkload(in Inputs, podSets []kueue.PodSet) Decision {
	pcs := in.PodCliqueSet
	name := WorkloadName(pcs.Name)
	if !pcs.IsSuspended() {
		d.Admitted = pending(pcs, fmt.Sprintf("Workload %s is missing; the PodCliqueSet is suspended and queues again", name), in.Now)
		return d.stop(pcs, fmt.Sprintf("Workload %s is missing", name))
	}
	if in.PodsRemain {
		d.Admitted = pending(pcs, fmt.Sprintf("waiting for the pods of the previous run to go before Workload %s is created", name), in.Now)
		return d.because("no Workload; pods remain")
	}
	if in.PriorityErr != nil {
		d.Admitted = refused(pcs, fmt.Sprintf("copse cannot build Workload %s: %v", name, in.PriorityErr), in.Now)
		d.RetryAfter = retryWait
		return d.because("the Workload's priority cannot be resolved: " + in.PriorityErr.Error())
	}
	d.Step, d.Workload = StepCreateWorkload, BuildWorkload(pcs, podSets, in.Priority)
	d.Admitted = pending(pcs, fmt.Sprintf("Workload %s waits in LocalQueue %s for Kueue to admit it", name, QueueName(pcs)), in.Now)
	if in.Refusal != "" {
		// The last creation was refused; this one is tried again.
		d.Admitted = refusedByAPIServer(pcs, in.Refusal, in.Now)
	}
	if meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeAdmitted) != nil {
		// Not the first Workload: the PodCliqueSet queues again.
		d.Event = &Event{Reason: EventRequeued, Message: fmt.Sprintf("created Workload %s in LocalQueue %s: queued again", name, QueueName(pcs))}
	}
	return d.because("no Workload")
}

// mismatched: the Workload no longer matches the PodCliqueSet. Kueue's
// Workload is immutable in spec, so it is replaced: the PodCliqueSet is
// stopped first, its templates restored once its pods are gone, then the
// Workload deleted (the next pass creates the new one).
func (d Decision) mismatched(in Inputs, mismatch string) Decision {
	pcs, wl := in.PodCliqueSet, in.Workload
	why := fmt.Sprintf("Workload %s no longer matches the PodCliqueSet: %s", wl.Name, mismatch)
	switch {
	case !pcs.IsSuspended():
		d.Admitted = pending(pcs, why+"; the PodCliqueSet is suspended and queues again", in.Now)
		return d.stop(pcs, why)
	case in.PodsRemain:
		d.Admitted = pending(pcs, why+"; waiting for its pods to go", in.Now)
		return d.because(why + "; pods remain")
	case CarriesAdmission(pcs, wl):
		d.Admitted = pending(pcs, why, in.Now)
		return d.restore(pcs, wl, why)
	}
	d.Step, d.Workload = StepDeleteWorkload, wl
	d.Admitted = pending(pcs, why+"; it is replaced", in.Now)
	return d.because(why)
}

// start merges the admission into the clique templates and resumes the
// PodCliqueSet, in one update. An admission that contradicts the templates
// finishes the Workload (FailedToStart): it can never start.
func (d Decision) start(in Inputs) Decision {
	pcs, wl := in.PodCliqueSet, in.Workload
	infos, err := AdmissionInfos(wl, in.Flavors)
	if err == nil {
		var started *copsev1alpha1.PodCliqueSet
		if started, err = Merge(pcs, infos); err == nil {
			started.Spec.Suspend = ptr.To(false)
			d.Step, d.PodCliqueSet = StepStart, started
			d.Event = &Event{Reason: EventAdmitted, Message: fmt.Sprintf("Workload %s is admitted by ClusterQueue %s; starting", wl.Name, clusterQueue(wl))}
			return d.because("admitted")
		}
	}
	if errors.Is(err, ErrConflict) {
		message := fmt.Sprintf("the admission of Workload %s cannot be applied: %v", wl.Name, err)
		d.Step, d.Workload = StepFinishWorkload, Finish(wl, ReasonFailedToStart, message, in.Now)
		d.Admitted = failedToStart(pcs, message, in.Now)
		d.Event = &Event{Warning: true, Reason: EventWorkloadRefused, Message: message}
		return d.because(message)
	}
	d.RetryAfter = retryWait
	return d.because(fmt.Sprintf("admitted, but not startable yet: %v", err))
}

// stop suspends the PodCliqueSet; its pods go, and no restart is spent.
func (d Decision) stop(pcs *copsev1alpha1.PodCliqueSet, why string) Decision {
	stopped := pcs.DeepCopy()
	stopped.Spec.Suspend = ptr.To(true)
	d.Step, d.PodCliqueSet = StepStop, stopped
	d.Event = &Event{Reason: EventEvicted, Message: why + "; the PodCliqueSet is suspended"}
	return d.because(why)
}

// restore sets the clique templates back to those the Workload was built
// from.
func (d Decision) restore(pcs *copsev1alpha1.PodCliqueSet, wl *kueue.Workload, why string) Decision {
	restored, _ := Restore(pcs, wl)
	d.Step, d.PodCliqueSet = StepRestore, restored
	return d.because(why + "; its pods are gone, the templates are restored")
}

func (d Decision) because(why string) Decision {
	d.Why = why
	return d
}

// finishedReason is Kueue's Finished reason and message for an ended
// PodCliqueSet, the message from its condition.
func finishedReason(pcs *copsev1alpha1.PodCliqueSet) (reason, message string) {
	if pcs.Status.Phase == copsev1alpha1.PodCliqueSetPhaseFailed {
		message = "the PodCliqueSet failed"
		if cond := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed); cond != nil && cond.Message != "" {
			message = cond.Message
		}
		return kueue.WorkloadFinishedReasonFailed, message
	}
	message = "the PodCliqueSet succeeded"
	if cond := meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet); cond != nil && cond.Status == metav1.ConditionTrue {
		message = cond.Message
	}
	return kueue.WorkloadFinishedReasonSucceeded, message
}

func clusterQueue(wl *kueue.Workload) string {
	if wl.Status.Admission == nil {
		return ""
	}
	return string(wl.Status.Admission.ClusterQueue)
}
