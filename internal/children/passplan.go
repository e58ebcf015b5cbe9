package children

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
)

// PassPlan is everything one reconcile pass of an owner writes, as plain
// values. A controller's pure decide step makes it from what its observe
// step read; Writer.Execute carries it out in one fixed order:
//
//	status   Status, with an optimistic lock on the owner as observed; a
//	         conflict, or the owner gone, ends the pass there: nothing
//	         below is written from a decision that is not durable
//	events   Events, on the owner as written; then OnWritten
//	objects  Deletes, then the sets' creates, updates and deletes
//	         (PlanWrites), within the write budget; then OwnWrites, in
//	         order, the first that fails stopping the rest
//	pods     Pods, in order, in one slow-starting burst, within what is
//	         left of the budget
//	settle   Settle's status, written when it differs, and its events
//	         (those that tell what the writes did)
type PassPlan struct {
	// Observed is the owner as this pass read it: the base of the status
	// patch and its optimistic lock.
	Observed client.Object
	// Status is the owner with the status this pass decided; nil, or equal
	// to Observed, writes none.
	Status client.Object
	// Events are recorded on the owner once its status is durable: they
	// describe the transitions that write made.
	Events []Event
	// OnWritten runs once the status is durable, with the owner as
	// written, before any object or pod is written: in-process records of
	// the transitions (metrics).
	OnWritten []func(written client.Object)
	// Deletes are objects a durable decision names (a replica's old run),
	// deleted with their UIDs as preconditions whoever controls them.
	Deletes []Deletion
	// Objects are the owner's desired-against-observed sets (PlanWrites).
	Objects []Set
	// OwnWrites are writes whose rules are the owner's controller's own
	// (a TrainJob's build: applied server-side, created once, a refusal
	// recorded on the owner), made after the object sets; the first that
	// fails stops the rest, its error noted under OwnWritesStep.
	OwnWrites []OwnWrite
	// Pods are the pod writes, in the order they are started.
	Pods []PodWrite
	// PodStartWindow is how many pod writes the burst starts with before
	// it widens (InSlowStart); 0 starts at MaxInFlight.
	PodStartWindow int
	// PodTimeBound: the burst starts no pod write after PassTime; what is
	// left is for the next pass (Outcome.PodsLeft).
	PodTimeBound bool
	// RequeueAfter is when the decision wants the next pass; zero: none.
	RequeueAfter time.Duration
	// Settle is the pure step after the writes: from the owner as written
	// and what the writes did, the owner with a second status (last errors,
	// refusal records; nil for none) and the events that tell what the
	// writes did (pods created, a refusal quoted).
	Settle func(written client.Object, outcome Outcome) (client.Object, []Event)
}

// Event is one event a plan records on its owner.
type Event struct {
	Type, Reason, Action, Message string
}

// Deletion is a set of objects of one kind a durable decision names.
type Deletion struct {
	// Step names the part of the pass the deletion belongs to, for errors
	// (Outcome.Errors).
	Step    string
	Kind    string
	Objects []client.Object
	// Propagation is how the garbage collector deletes their dependents;
	// "" is in the background.
	Propagation metav1.DeletionPropagation
}

// OwnWrite is one write of PassPlan.OwnWrites: made with the Writer's
// client and recorder, for owner as its status was written.
type OwnWrite interface {
	Write(ctx context.Context, w Writer, owner client.Object) error
}

// OwnWritesStep is the Step of the OwnWrites' errors.
const OwnWritesStep = "writes"

// PodOp is a kind of pod write.
type PodOp string

// The pod writes a plan is made of. Each names the pod by UID, so a pod made
// later under the same name is never touched, and finds a pod already gone
// (or replaced) a success.
const (
	// PodDelete deletes the pod with its grace period; Release also drops
	// copse's outcome finalizer (the pod is no longer accounted for).
	PodDelete PodOp = "delete"
	// PodDeleteNow deletes the pod of a lost node at once (grace period 0,
	// as the pod garbage collector does) and releases its finalizer.
	PodDeleteNow PodOp = "delete-now"
	// PodRelease drops copse's outcome finalizer only.
	PodRelease PodOp = "release"
	// PodMove moves a pod a restart in place keeps to attempt Attempt: the
	// owner references DropOwners name go, the attempt label is raised, the
	// startup gate closes (one patch with an optimistic lock).
	PodMove PodOp = "move"
	// PodAdopt makes Owner the pod's controller and adds the outcome
	// finalizer (one patch with an optimistic lock).
	PodAdopt PodOp = "adopt"
	// PodOpenGate opens the pod's startup gate.
	PodOpenGate PodOp = "open-gate"
	// PodCreate creates New.
	PodCreate PodOp = "create"
)

// PodWrite is one pod write of a plan.
type PodWrite struct {
	Op PodOp
	// Step names the part of the pass the write belongs to, for errors.
	Step string
	// Pod is the pod written (every op but PodCreate).
	Pod podstate.Summary
	// Release: a PodDelete also drops the outcome finalizer.
	Release bool
	// Attempt and DropOwners are a PodMove's.
	Attempt    int
	DropOwners []types.UID
	// Owner is a PodAdopt's new controller reference.
	Owner *metav1.OwnerReference
	// New is a PodCreate's pod, built whole.
	New *corev1.Pod
}

// Outcome is what Writer.Execute did.
type Outcome struct {
	// Written is the owner as its status was written (as observed when the
	// status did not change); nil when the pass ended at the status write.
	Written client.Object
	// Conflict: the status was decided on a stale owner; Gone: the owner
	// no longer exists. Either ends the pass at the status write.
	Conflict, Gone bool
	// Errors are the failed writes by the Step of their entry; the status
	// write's own error under StatusStep.
	Errors map[string][]error
	// CutShort: the write budget left work for the next pass.
	CutShort bool
	// PodDone holds, per entry of Plan.Pods, whether its write went
	// through; PodsLeft counts the entries not started (budget, time, an
	// earlier failure).
	PodDone  []bool
	PodsLeft int
	// PodErrors holds, per entry of Plan.Pods, its write's error.
	PodErrors []error
}

// StatusStep is the Step of the status writes' errors.
const StatusStep = "status"

// Err is every failed write, joined, each wrapped with its step.
func (o Outcome) Err() error {
	return joinSteps(o.Errors)
}

// Failed reports whether a write of step failed.
func (o Outcome) Failed(step string) bool { return len(o.Errors[step]) > 0 }

// EndedAtStatus is the pass's result when it ended at the status write,
// with nothing else written: a status decided on a stale view is decided
// again soon from fresh data, an owner gone needs nothing more, a failed
// write is retried with back-off. ended is false when the status write
// went through and the result is the caller's to make.
func (o Outcome) EndedAtStatus() (result ctrl.Result, ended bool, err error) {
	switch {
	case o.Conflict:
		return ctrl.Result{RequeueAfter: requeue.AfterConflict}, true, nil
	case o.Gone:
		return ctrl.Result{}, true, nil
	case o.Failed(StatusStep):
		return ctrl.Result{}, true, o.Err()
	}
	return ctrl.Result{}, false, nil
}

func (o *Outcome) note(step string, err error) {
	o.Errors[step] = append(o.Errors[step], err)
}

// joinSteps joins errors by step, each wrapped with its step's name, in a
// stable order.
func joinSteps(byStep map[string][]error) error {
	steps := make([]string, 0, len(byStep))
	for step := range byStep {
		steps = append(steps, step)
	}
	slices.Sort(steps)
	var errs []error
	for _, step := range steps {
		for _, err := range byStep[step] {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	return errors.Join(errs...)
}
