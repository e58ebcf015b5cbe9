package kueue

import (
	"errors"
	"slices"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// TestDecide walks every row of the protocol (docs/kueue.md): for each
// state of a PodCliqueSet and its Workload, the one step copse takes, the
// PodCliqueSet's Admitted condition and the event.
func TestDecide(t *testing.T) {
	type want struct {
		step Step
		// status and reason of the Admitted condition.
		status metav1.ConditionStatus
		reason string
		// message holds, when set, in the condition's message.
		message string
		// event is the event's reason, "" for none.
		event string
		retry bool
	}
	tests := []struct {
		name  string
		in    Inputs
		want  want
		check func(t *testing.T, d Decision)
	}{
		// Ending.
		{
			name:  "a PodCliqueSet being deleted: its Workload's finalizer is removed, the garbage collector deletes it",
			in:    Inputs{PodCliqueSet: deleting(running(queued())), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: wantReleased("wl-uid"),
		},
		{
			name: "a PodCliqueSet being deleted, its Workload made without the finalizer: nothing",
			in:   Inputs{PodCliqueSet: deleting(running(queued())), Workload: withoutFinalizer(admitted(workloadOf(queued())))},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name:  "the PodCliqueSet is gone: its Workload's finalizer is removed",
			in:    Inputs{Orphan: deletingWorkload(admitted(workloadOf(queued())))},
			want:  want{step: StepRemoveFinalizer},
			check: wantReleased("wl-uid"),
		},
		{
			name: "the PodCliqueSet is gone, its Workload without the finalizer: nothing",
			in:   Inputs{Orphan: withoutFinalizer(admitted(workloadOf(queued())))},
			want: want{step: StepNone},
		},
		{
			name: "the PodCliqueSet is gone and had no Workload: nothing",
			in:   Inputs{},
			want: want{step: StepNone},
		},
		{
			name: "the Workload of an earlier PodCliqueSet of the same name holds the name: its finalizer is removed",
			in: Inputs{PodCliqueSet: queued(), WorkloadNameTaken: true,
				Orphan: withOwnerUID(deletingWorkload(admitted(workloadOf(queued()))), "earlier-uid")},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "another object", retry: true},
			check: wantReleased("wl-uid"),
		},
		{
			name: "the Workload of an earlier PodCliqueSet released: wait for it to go",
			in: Inputs{PodCliqueSet: queued(), WorkloadNameTaken: true,
				Orphan: withoutFinalizer(withOwnerUID(deletingWorkload(admitted(workloadOf(queued()))), "earlier-uid"))},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "another object", retry: true},
		},
		{
			name: "a finished Workload: its finalizer is removed, the condition stays",
			in: Inputs{PodCliqueSet: withAdmitted(succeeded(running(queued())), metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted),
				Workload: finished(admitted(workloadOf(queued())), kueue.WorkloadFinishedReasonSucceeded)},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: wantReleased("wl-uid"),
		},
		{
			name: "a finished Workload released: nothing more",
			in: Inputs{PodCliqueSet: withAdmitted(succeeded(running(queued())), metav1.ConditionTrue, copsev1alpha1.ReasonAdmitted),
				Workload: withoutFinalizer(finished(admitted(workloadOf(queued())), kueue.WorkloadFinishedReasonSucceeded))},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name:  "a Workload finished because it failed to start: released; the condition says so",
			in:    Inputs{PodCliqueSet: queued(), Workload: finished(admitted(workloadOf(queued())), ReasonFailedToStart)},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonFailedToStart, message: "cannot be applied"},
			check: wantReleased("wl-uid"),
		},
		{
			name: "the PodCliqueSet succeeded: its Workload is finished, Succeeded",
			in:   Inputs{PodCliqueSet: succeeded(running(queued())), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepFinishWorkload, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, "succeeded")
			},
		},
		{
			name: "the PodCliqueSet failed: its Workload is finished, Failed, with the PodCliqueSet's message",
			in:   Inputs{PodCliqueSet: failed(running(queued())), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepFinishWorkload, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonFailed, "replica 0 failed after 2 restarts")
			},
		},
		{
			name: "an ended PodCliqueSet without a Workload: none is made",
			in:   Inputs{PodCliqueSet: succeeded(running(queued()))},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
		},
		{
			name: "a decided failure whose pods are still going: wait for the phase",
			in:   Inputs{PodCliqueSet: failing(running(queued())), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},

		// No Workload can be built.
		{
			name: "more cliques than the Kueue's 8 pod sets, suspended: refused, nothing created",
			in:   Inputs{PodCliqueSet: withCliques(queued(), 9), MaxPodSets: 8},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused, message: "spec.template.cliques: 9 cliques"},
		},
		{
			name:  "more cliques than the Kueue's 8 pod sets, running: stopped",
			in:    Inputs{PodCliqueSet: running(withCliques(queued(), 9)), MaxPodSets: 8},
			want:  want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused, event: EventEvicted},
			check: func(t *testing.T, d Decision) { wantSuspended(t, d.PodCliqueSet, true) },
		},
		{
			name: "packing Kueue cannot express, suspended: refused, nothing created",
			in:   Inputs{PodCliqueSet: queued(), TopologyErr: errors.New("spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing")},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused,
				message: "copse cannot build Workload podcliqueset-llm: spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing"},
		},
		{
			name:  "packing Kueue cannot express, running: stopped",
			in:    Inputs{PodCliqueSet: running(queued()), Workload: admitted(workloadOf(queued())), TopologyErr: errors.New("Kueue cannot express this packing")},
			want:  want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused, event: EventEvicted},
			check: func(t *testing.T, d Decision) { wantSuspended(t, d.PodCliqueSet, true) },
		},

		// No Workload.
		{
			name: "a new suspended PodCliqueSet: its Workload is created",
			in:   Inputs{PodCliqueSet: queued(), Priority: Priority{ClassRef: kueue.NewWorkloadPriorityClassRef("high"), Value: 1000}},
			want: want{step: StepCreateWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "waits in LocalQueue team-a"},
			check: func(t *testing.T, d Decision) {
				wl := d.Workload
				if wl.Name != workloadName || wl.Namespace != "ml" || wl.Spec.QueueName != queueName {
					t.Errorf("created %s/%s in queue %q, want ml/%s in %q", wl.Namespace, wl.Name, wl.Spec.QueueName, workloadName, queueName)
				}
				if ref := metav1.GetControllerOf(wl); ref == nil || ref.UID != "pcs-uid" || ref.Kind != "PodCliqueSet" {
					t.Errorf("controller of the Workload = %+v, want PodCliqueSet llm", ref)
				}
				if wl.Spec.PriorityClassRef == nil || wl.Spec.PriorityClassRef.Name != "high" || ptr.Deref(wl.Spec.Priority, 0) != 1000 {
					t.Errorf("priority %+v %v, want WorkloadPriorityClass high, 1000", wl.Spec.PriorityClassRef, wl.Spec.Priority)
				}
				if len(wl.Spec.PodSets) != 3 {
					t.Errorf("%d pod sets, want 3", len(wl.Spec.PodSets))
				}
			},
		},
		{
			name: "a PodCliqueSet that had a Workload gets a new one: queued again",
			in:   Inputs{PodCliqueSet: withAdmitted(queued(), metav1.ConditionFalse, copsev1alpha1.ReasonPending)},
			want: want{step: StepCreateWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, event: EventRequeued},
		},
		{
			name: "the API server refused the last creation: tried again, the condition quotes the refusal",
			in:   Inputs{PodCliqueSet: queued(), Refusal: `workloads.kueue.x-k8s.io "podcliqueset-llm" is forbidden: exceeded quota: workloads`},
			want: want{step: StepCreateWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused,
				message: `the API server refused Workload podcliqueset-llm: workloads.kueue.x-k8s.io "podcliqueset-llm" is forbidden: exceeded quota`},
		},
		{
			name: "a refusal not yet cleared says nothing about a Workload that exists",
			in: Inputs{PodCliqueSet: started(queued()), Workload: admitted(workloadOf(queued())), PodsRemain: true,
				Refusal: "exceeded quota: workloads"},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name: "no Workload and pods of the last run remain: wait",
			in:   Inputs{PodCliqueSet: queued(), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "pods of the previous run"},
		},
		{
			name:  "no Workload under a running PodCliqueSet (deleted): stopped",
			in:    Inputs{PodCliqueSet: started(queued()), PodsRemain: true},
			want:  want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "missing", event: EventEvicted},
			check: func(t *testing.T, d Decision) { wantSuspended(t, d.PodCliqueSet, true) },
		},
		{
			name: "a priority class that does not exist: refused until it does",
			in:   Inputs{PodCliqueSet: queued(), PriorityErr: errors.New(`WorkloadPriorityClass "high" not found`)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonWorkloadRefused, message: `"high" not found`, retry: true},
		},
		{
			name: "the Workload's name is held by another object, suspended: wait",
			in:   Inputs{PodCliqueSet: queued(), WorkloadNameTaken: true},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "another object", retry: true},
		},
		{
			name: "the Workload's name is held by another object, running: stopped",
			in:   Inputs{PodCliqueSet: running(queued()), WorkloadNameTaken: true, PodsRemain: true},
			want: want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, event: EventEvicted, retry: true},
		},

		// The Workload is being deleted (by a user, by Kueue's retention):
		// its finalizer holds it, and its quota, until the PodCliqueSet is
		// stopped, its pods are gone and its templates restored from it.
		{
			name:  "the Workload is being deleted under a running PodCliqueSet: stopped",
			in:    Inputs{PodCliqueSet: started(queued()), Workload: deletingWorkload(admitted(workloadOf(queued()))), PodsRemain: true},
			want:  want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "being deleted", event: EventEvicted},
			check: func(t *testing.T, d Decision) { wantSuspended(t, d.PodCliqueSet, true) },
		},
		{
			name: "the Workload is being deleted, stopped, pods still going: wait, the finalizer holds the quota",
			in:   Inputs{PodCliqueSet: suspended(started(queued())), Workload: deletingWorkload(admitted(workloadOf(queued()))), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "pods"},
		},
		{
			name: "the Workload is being deleted, pods gone: the templates are restored from it",
			in:   Inputs{PodCliqueSet: suspended(started(queued())), Workload: deletingWorkload(admitted(workloadOf(queued())))},
			want: want{step: StepRestore, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: func(t *testing.T, d Decision) {
				wantTemplatesOf(t, d.PodCliqueSet, queued())
				wantSuspended(t, d.PodCliqueSet, true)
			},
		},
		{
			name:  "the Workload is being deleted, templates restored: its finalizer is removed",
			in:    Inputs{PodCliqueSet: queued(), Workload: deletingWorkload(admitted(workloadOf(queued())))},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: wantReleased("wl-uid"),
		},
		{
			name: "the Workload is being deleted and released, suspended: wait for it to go",
			in:   Inputs{PodCliqueSet: queued(), Workload: withoutFinalizer(deletingWorkload(pendingIn(workloadOf(queued()))))},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
		},

		// The queue label was removed (while suspended): the Workload is
		// deleted, and released once the pods are gone and the templates
		// restored; then the Admitted condition goes.
		{
			name: "the queue label removed: the Workload is deleted",
			in:   Inputs{PodCliqueSet: withQueue(queued(), ""), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepDeleteWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "left"},
			check: func(t *testing.T, d Decision) {
				if d.Workload.UID != "wl-uid" {
					t.Errorf("deletes %s, want the stored Workload", d.Workload.UID)
				}
			},
		},
		{
			name: "the queue label removed, the Workload being deleted, pods still going: wait",
			in:   Inputs{PodCliqueSet: withQueue(suspended(started(queued())), ""), Workload: deletingWorkload(admitted(workloadOf(queued()))), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
		},
		{
			name:  "the queue label removed, the Workload being deleted, pods gone: the templates are restored",
			in:    Inputs{PodCliqueSet: withQueue(suspended(started(queued())), ""), Workload: deletingWorkload(admitted(workloadOf(queued())))},
			want:  want{step: StepRestore, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: func(t *testing.T, d Decision) { wantTemplatesOf(t, d.PodCliqueSet, queued()) },
		},
		{
			name:  "the queue label removed, the Workload being deleted, templates restored: its finalizer is removed",
			in:    Inputs{PodCliqueSet: withQueue(queued(), ""), Workload: deletingWorkload(admitted(workloadOf(queued())))},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: wantReleased("wl-uid"),
		},
		{
			name:  "the queue label removed and the PodCliqueSet resumed by its user: released, never stopped",
			in:    Inputs{PodCliqueSet: withQueue(started(queued()), ""), Workload: deletingWorkload(admitted(workloadOf(queued()))), PodsRemain: true},
			want:  want{step: StepRemoveFinalizer, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: wantReleased("wl-uid"),
		},
		{
			name: "the queue label removed, the Workload gone: the Admitted condition is removed",
			in:   Inputs{PodCliqueSet: withAdmitted(withQueue(queued(), ""), metav1.ConditionFalse, copsev1alpha1.ReasonPending)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: func(t *testing.T, d Decision) {
				if !d.RemoveAdmitted {
					t.Error("the Admitted condition is kept")
				}
			},
		},
		{
			name: "a Workload made without the finalizer (before copse set it) runs as before",
			in:   Inputs{PodCliqueSet: started(queued()), Workload: withoutFinalizer(admitted(workloadOf(queued()))), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},

		// The Workload no longer matches.
		{
			name: "pod sets changed under a running PodCliqueSet: stopped",
			in:   Inputs{PodCliqueSet: withReplicas(started(queued()), 3), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "counts 3 pods instead of 2", event: EventEvicted},
		},
		{
			name: "pod sets changed, suspended, pods remain: wait",
			in:   Inputs{PodCliqueSet: suspended(withReplicas(started(queued()), 3)), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
		},
		{
			name: "pod sets changed, suspended, pods gone, templates merged: restored",
			in:   Inputs{PodCliqueSet: suspended(withReplicas(started(queued()), 3)), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepRestore, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: func(t *testing.T, d Decision) {
				wantTemplatesOf(t, d.PodCliqueSet, withReplicas(queued(), 3))
				wantSuspended(t, d.PodCliqueSet, true)
			},
		},
		{
			name: "pod sets changed, suspended, templates restored: the Workload is replaced",
			in:   Inputs{PodCliqueSet: withReplicas(queued(), 3), Workload: admitted(workloadOf(queued()))},
			want: want{step: StepDeleteWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "replaced"},
			check: func(t *testing.T, d Decision) {
				if d.Workload.UID != "wl-uid" {
					t.Errorf("deletes %s, want the stored Workload", d.Workload.UID)
				}
			},
		},
		{
			name: "the queue label changed while waiting: the Workload is replaced",
			in:   Inputs{PodCliqueSet: withQueue(queued(), "team-b"), Workload: pendingIn(workloadOf(queued()))},
			want: want{step: StepDeleteWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: `LocalQueue "team-b"`},
		},
		{
			name: "tolerations changed while waiting: the Workload is replaced",
			in:   Inputs{PodCliqueSet: withToleration(queued()), Workload: pendingIn(workloadOf(queued()))},
			want: want{step: StepDeleteWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "tolerations"},
		},

		// PodsReady.
		{
			name: "a new Workload: PodsReady False, WaitForStart",
			in:   Inputs{PodCliqueSet: queued(), Workload: pendingIn(workloadOf(queued()))},
			want: want{step: StepSetPodsReady, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadPodsReady, metav1.ConditionFalse, kueue.WorkloadWaitForStart, "")
			},
		},
		{
			name: "every replica available: PodsReady True, Started",
			in:   Inputs{PodCliqueSet: available(started(queued())), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: want{step: StepSetPodsReady, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadPodsReady, metav1.ConditionTrue, kueue.WorkloadStarted, "")
			},
		},
		{
			name: "a replica lost after being ready: PodsReady False, WaitForRecovery",
			in: Inputs{PodCliqueSet: started(queued()), PodsRemain: true,
				Workload: podsReady(admitted(workloadOf(queued())), metav1.ConditionTrue, kueue.WorkloadStarted)},
			want: want{step: StepSetPodsReady, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadPodsReady, metav1.ConditionFalse, kueue.WorkloadWaitForRecovery, "")
			},
		},

		// Eviction.
		{
			name: "evicted while running: stopped",
			in: Inputs{PodCliqueSet: started(queued()), PodsRemain: true,
				Workload: evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption)},
			want: want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonEvicted, message: "(Preempted)", event: EventEvicted},
			check: func(t *testing.T, d Decision) {
				wantSuspended(t, d.PodCliqueSet, true)
				if !strings.Contains(d.Event.Message, "Preempted to accommodate") {
					t.Errorf("event %q does not quote Kueue's message", d.Event.Message)
				}
			},
		},
		{
			name: "evicted, suspended, pods still going: wait, quota held",
			in: Inputs{PodCliqueSet: suspended(started(queued())), PodsRemain: true,
				Workload: evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonEvicted},
		},
		{
			name: "evicted, pods gone: the templates are restored first",
			in: Inputs{PodCliqueSet: suspended(started(queued())),
				Workload: evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption)},
			want:  want{step: StepRestore, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonEvicted},
			check: func(t *testing.T, d Decision) { wantTemplatesOf(t, d.PodCliqueSet, queued()) },
		},
		{
			name: "evicted by preemption, restored: the reservation is cleared, requeued",
			in:   Inputs{PodCliqueSet: queued(), Workload: evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption)},
			want: want{step: StepClearReservation, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "Preempted to accommodate", event: EventRequeued},
			check: func(t *testing.T, d Decision) {
				wl := d.Workload
				wantCondition(t, wl, kueue.WorkloadRequeued, metav1.ConditionTrue, kueue.WorkloadEvictedByPreemption, "Preempted to accommodate")
				wantCondition(t, wl, kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "Preempted to accommodate")
				wantCondition(t, wl, kueue.WorkloadAdmitted, metav1.ConditionFalse, "NoReservation", "")
				if wl.Status.Admission != nil {
					t.Errorf("admission %+v, want none", wl.Status.Admission)
				}
				if ptr.Deref(wl.Status.AccumulatedPastExecutionTimeSeconds, 0) != 600 {
					t.Errorf("accumulatedPastExecutionTimeSeconds = %v, want 600 (admitted 10 minutes)", wl.Status.AccumulatedPastExecutionTimeSeconds)
				}
			},
		},
		{
			name: "evicted because deactivated: requeued False",
			in:   Inputs{PodCliqueSet: queued(), Workload: evicted(admitted(workloadOf(queued())), kueue.WorkloadDeactivated)},
			want: want{step: StepClearReservation, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, event: EventRequeued},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadRequeued, metav1.ConditionFalse, kueue.WorkloadDeactivated, "")
			},
		},
		{
			name: "evicted and requeued: wait for the next admission",
			in:   Inputs{PodCliqueSet: queued(), Workload: ClearReservation(evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption), *Eviction(evicted(workloadOf(queued()), kueue.WorkloadEvictedByPreemption)), now)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "Preempted to accommodate"},
		},

		// Waiting and starting.
		{
			name: "waiting for quota: nothing; the condition quotes Kueue",
			in:   Inputs{PodCliqueSet: queued(), Workload: podsReady(pendingIn(workloadOf(queued())), metav1.ConditionFalse, kueue.WorkloadWaitForStart)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "insufficient unused quota for cpu"},
		},
		{
			name: "quota reserved, an admission check pending: nothing; the condition names it",
			in: Inputs{PodCliqueSet: queued(), Workload: podsReady(withCheck(reserved(workloadOf(queued())), kueue.CheckStatePending),
				metav1.ConditionFalse, kueue.WorkloadWaitForStart)},
			want: want{step: StepNone, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, message: "provisioning (Pending): waiting for nodes"},
		},
		{
			name: "admitted, pods of an earlier run still going: wait",
			in:   Inputs{PodCliqueSet: queued(), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name: "admitted: started with the flavor's node labels, tolerations and the podset label",
			in:   Inputs{PodCliqueSet: queued(), Workload: admitted(workloadOf(queued())), Flavors: flavors()},
			want: want{step: StepStart, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted, message: "ClusterQueue cluster-gpu", event: EventAdmitted},
			check: func(t *testing.T, d Decision) {
				wantSuspended(t, d.PodCliqueSet, false)
				for _, clique := range d.PodCliqueSet.Spec.Template.Cliques {
					spec := clique.Spec.PodSpec
					if clique.Labels[PodSetLabel] != clique.Name || clique.Labels["app"] != clique.Name ||
						spec.NodeSelector[flavorLabel] != flavorValue || len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != flavorTaint {
						t.Errorf("clique %s: labels %v, nodeSelector %v, tolerations %v; want the admission merged in",
							clique.Name, clique.Labels, spec.NodeSelector, spec.Tolerations)
					}
				}
			},
		},
		{
			name: "admitted with an admission check's pod set update: merged too",
			in: Inputs{PodCliqueSet: queued(), Flavors: flavors(),
				Workload: withCondition(withCheck(admitted(workloadOf(queued())), kueue.CheckStateReady), kueue.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "")},
			want: want{step: StepStart, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted, event: EventAdmitted},
			check: func(t *testing.T, d Decision) {
				leader := d.PodCliqueSet.Spec.Template.Cliques[0]
				if leader.Annotations["provisioning/request"] != "req-1" || leader.Spec.PodSpec.NodeSelector["provisioning/pool"] != "p1" {
					t.Errorf("leader annotations %v, nodeSelector %v; want the check's update", leader.Annotations, leader.Spec.PodSpec.NodeSelector)
				}
			},
		},
		{
			name: "admitted to a flavor copse cannot read yet: retried",
			in:   Inputs{PodCliqueSet: queued(), Workload: admitted(workloadOf(queued())), Flavors: Flavors{}},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted, retry: true},
		},
		{
			name: "admitted to a flavor whose node label the template contradicts: the Workload fails to start",
			in:   Inputs{PodCliqueSet: withNodeSelector(queued(), flavorLabel, "b"), Workload: admitted(workloadOf(withNodeSelector(queued(), flavorLabel, "b"))), Flavors: flavors()},
			want: want{step: StepFinishWorkload, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonFailedToStart, message: "nodeSelector[example.com/pool]", event: EventWorkloadRefused},
			check: func(t *testing.T, d Decision) {
				wantCondition(t, d.Workload, kueue.WorkloadFinished, metav1.ConditionTrue, ReasonFailedToStart, "conflicts")
				if !d.Event.Warning {
					t.Error("the WorkloadRefused event is not a warning")
				}
			},
		},
		{
			name: "suspended by hand while admitted, pods gone: the templates are restored, then it starts again",
			in:   Inputs{PodCliqueSet: suspended(started(queued())), Workload: admitted(workloadOf(queued())), Flavors: flavors()},
			want: want{step: StepRestore, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name: "an Inference PodCliqueSet is started like a Training one",
			in:   Inputs{PodCliqueSet: inference(queued()), Workload: admitted(workloadOf(inference(queued()))), Flavors: flavors()},
			want: want{step: StepStart, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted, event: EventAdmitted},
		},

		// Running.
		{
			name: "running without an admission (reservation lost): stopped",
			in:   Inputs{PodCliqueSet: started(queued()), Workload: podsReady(pendingIn(workloadOf(queued())), metav1.ConditionFalse, kueue.WorkloadWaitForStart), PodsRemain: true},
			want: want{step: StepStop, status: metav1.ConditionFalse, reason: copsev1alpha1.ReasonPending, event: EventEvicted},
		},
		{
			name: "running and admitted: nothing",
			in:   Inputs{PodCliqueSet: started(queued()), Workload: admitted(workloadOf(queued())), PodsRemain: true},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
		{
			name: "an Inference PodCliqueSet keeps running: its Workload never finishes",
			in: Inputs{PodCliqueSet: available(inference(started(queued()))), PodsRemain: true,
				Workload: podsReady(admitted(workloadOf(inference(queued()))), metav1.ConditionTrue, kueue.WorkloadStarted)},
			want: want{step: StepNone, status: metav1.ConditionTrue, reason: copsev1alpha1.ReasonAdmitted},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			d := Decide(tc.in)
			if d.Step != tc.want.step {
				t.Fatalf("step %q (%s), want %q", d.Step, d.Why, tc.want.step)
			}
			switch {
			case tc.in.PodCliqueSet == nil:
				// No PodCliqueSet, no condition to write.
				if d.Admitted != (metav1.Condition{}) {
					t.Errorf("Admitted %+v for a PodCliqueSet that is gone", d.Admitted)
				}
			case d.Admitted.Type != copsev1alpha1.ConditionTypeAdmitted || d.Admitted.Status != tc.want.status || d.Admitted.Reason != tc.want.reason:
				t.Errorf("Admitted %s/%s (%q), want %s/%s", d.Admitted.Status, d.Admitted.Reason, d.Admitted.Message, tc.want.status, tc.want.reason)
			}
			if !strings.Contains(d.Admitted.Message, tc.want.message) {
				t.Errorf("Admitted message %q does not contain %q", d.Admitted.Message, tc.want.message)
			}
			if d.RemoveAdmitted && tc.in.PodCliqueSet != nil && QueueName(tc.in.PodCliqueSet) != "" {
				t.Error("the Admitted condition of a queued PodCliqueSet is removed")
			}
			switch {
			case tc.want.event == "" && d.Event != nil:
				t.Errorf("event %+v, want none", *d.Event)
			case tc.want.event != "" && (d.Event == nil || d.Event.Reason != tc.want.event):
				t.Errorf("event %+v, want %s", d.Event, tc.want.event)
			}
			if (d.RetryAfter > 0) != tc.want.retry {
				t.Errorf("retry after %v, want a retry: %v", d.RetryAfter, tc.want.retry)
			}
			switch d.Step {
			case StepStart, StepStop, StepRestore:
				if d.PodCliqueSet == nil {
					t.Fatal("no PodCliqueSet to write")
				}
				if d.PodCliqueSet == tc.in.PodCliqueSet {
					t.Error("the input PodCliqueSet was changed in place")
				}
			case StepCreateWorkload, StepDeleteWorkload, StepClearReservation, StepFinishWorkload, StepSetPodsReady, StepRemoveFinalizer:
				if d.Workload == nil {
					t.Fatal("no Workload to write")
				}
				if d.Workload == tc.in.Workload || d.Workload == tc.in.Orphan {
					if d.Step != StepDeleteWorkload {
						t.Error("the input Workload was changed in place")
					}
				}
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}

// TestDecideTakesEachStepOnce follows a Workload through a preemption
// and re-admission, applying each step to the inputs, and checks the
// steps come in the protocol's order, each once.
func TestDecideTakesEachStepOnce(t *testing.T) {
	pcs := started(queued())
	wl := podsReady(evicted(admitted(workloadOf(queued())), kueue.WorkloadEvictedByPreemption), metav1.ConditionFalse, kueue.WorkloadWaitForStart)
	podsRemain := true
	var steps []Step
	for range 10 {
		d := Decide(Inputs{PodCliqueSet: pcs, Workload: wl, Flavors: flavors(), PodsRemain: podsRemain, Now: now})
		if d.Step == StepNone {
			if podsRemain {
				// The PodCliqueSet controller removes the pods.
				podsRemain = false
				continue
			}
			if Eviction(wl) != nil && !HasQuotaReservation(wl) {
				// Kueue admits it again.
				wl = admitted(withCondition(wl, kueue.WorkloadEvicted, metav1.ConditionFalse, "QuotaReserved", ""))
				continue
			}
			break
		}
		steps = append(steps, d.Step)
		switch d.Step {
		case StepStart, StepStop, StepRestore:
			pcs = d.PodCliqueSet
		default:
			wl = d.Workload
		}
	}
	want := []Step{StepStop, StepRestore, StepClearReservation, StepStart}
	if strings.Join(stepNames(steps), ",") != strings.Join(stepNames(want), ",") {
		t.Errorf("steps %v, want %v", steps, want)
	}
	if pcs.IsSuspended() || pcs.Spec.Template.Cliques[0].Labels[PodSetLabel] != "leader" {
		t.Errorf("the PodCliqueSet ends suspended=%v with leader labels %v; want running with the admission merged",
			pcs.IsSuspended(), pcs.Spec.Template.Cliques[0].Labels)
	}
}

// TestDecideReplacesADeletedWorkload follows a Workload deleted under its
// running PodCliqueSet: its finalizer holds it until the PodCliqueSet is
// stopped, its pods are gone and its templates restored from it; only then
// is it released, and the next Workload is built from templates that carry
// no admission.
func TestDecideReplacesADeletedWorkload(t *testing.T) {
	pcs := started(queued())
	wl := deletingWorkload(admitted(workloadOf(queued())))
	podsRemain := true
	var steps []Step
passes:
	for range 10 {
		d := Decide(Inputs{PodCliqueSet: pcs, Workload: wl, Flavors: flavors(), PodsRemain: podsRemain, Now: now})
		if d.Step == StepNone {
			if !podsRemain {
				break
			}
			// The PodCliqueSet controller removes the pods.
			podsRemain = false
			continue
		}
		steps = append(steps, d.Step)
		switch d.Step {
		case StepStop, StepRestore:
			pcs = d.PodCliqueSet
		case StepRemoveFinalizer:
			if wl != nil && podsRemain {
				t.Fatal("the Workload was released while the pods of its run remain")
			}
			// Released, the Workload goes.
			wl = nil
		case StepCreateWorkload:
			wl = d.Workload
			for _, podSet := range wl.Spec.PodSets {
				spec := podSet.Template.Spec
				if _, merged := podSet.Template.Labels[PodSetLabel]; merged || len(spec.NodeSelector) > 0 || len(spec.Tolerations) > 0 {
					t.Errorf("the new Workload's pod set %s carries the old admission: labels %v, nodeSelector %v, tolerations %v",
						podSet.Name, podSet.Template.Labels, spec.NodeSelector, spec.Tolerations)
				}
			}
			// It queues; the rest is TestDecideTakesEachStepOnce's.
			break passes
		default:
			t.Fatalf("unexpected step %s (%s)", d.Step, d.Why)
		}
	}
	want := []Step{StepStop, StepRestore, StepRemoveFinalizer, StepCreateWorkload}
	if strings.Join(stepNames(steps), ",") != strings.Join(stepNames(want), ",") {
		t.Errorf("steps %v, want %v", steps, want)
	}
}

func stepNames(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = string(s)
	}
	return out
}

func deleting(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.DeletionTimestamp = &metav1.Time{Time: now}
	return pcs
}

func deletingWorkload(wl *kueue.Workload) *kueue.Workload {
	wl = wl.DeepCopy()
	wl.DeletionTimestamp = &metav1.Time{Time: now}
	return wl
}

// withOwnerUID is wl controlled by a PodCliqueSet of the same name and
// another UID: an earlier one.
func withOwnerUID(wl *kueue.Workload, uid types.UID) *kueue.Workload {
	wl = wl.DeepCopy()
	wl.OwnerReferences[0].UID = uid
	return wl
}

// wantReleased: the step removes the finalizer of the Workload of uid, and
// nothing else.
func wantReleased(uid types.UID) func(t *testing.T, d Decision) {
	return func(t *testing.T, d Decision) {
		t.Helper()
		if d.Workload.UID != uid {
			t.Errorf("releases Workload %s, want %s", d.Workload.UID, uid)
		}
		if slices.Contains(d.Workload.Finalizers, kueue.ResourceInUseFinalizerName) {
			t.Errorf("finalizers %v still hold %s", d.Workload.Finalizers, kueue.ResourceInUseFinalizerName)
		}
		if d.Workload.ResourceVersion == "" {
			t.Error("the update carries no resourceVersion")
		}
	}
}

func suspended(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Suspend = ptr.To(true)
	pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhasePending
	pcs.Status.StartTime = nil
	return pcs
}

func succeeded(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseSucceeded
	return pcs
}

func failing(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeFailed, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonMaxRestartsExceeded, Message: "replica 0 failed after 2 restarts"})
	return pcs
}

func failed(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = failing(pcs)
	pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseFailed
	return pcs
}

func available(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Status.AvailableReplicas = pcs.Spec.Replicas
	return pcs
}

func inference(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
	return pcs
}

func withAdmitted(pcs *copsev1alpha1.PodCliqueSet, status metav1.ConditionStatus, reason string) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: status, Reason: reason, Message: "before"})
	return pcs
}

func withReplicas(pcs *copsev1alpha1.PodCliqueSet, replicas int32) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Replicas = replicas
	return pcs
}

func withQueue(pcs *copsev1alpha1.PodCliqueSet, queue string) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Labels[QueueNameLabel] = queue
	return pcs
}

func withToleration(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Template.Cliques[1].Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	return pcs
}

func withNodeSelector(pcs *copsev1alpha1.PodCliqueSet, key, value string) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.NodeSelector = map[string]string{key: value}
	return pcs
}

func withCliques(pcs *copsev1alpha1.PodCliqueSet, n int) *copsev1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = nil
	pcs.Spec.Template.Cliques = nil
	for i := range n {
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &grovecorev1alpha1.PodCliqueTemplateSpec{
			Name: string(rune('a' + i)), Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1}})
	}
	return pcs
}

// withCheck adds admission check "provisioning" in state, with a pod set
// update for the leader.
func withCheck(wl *kueue.Workload, state kueue.CheckState) *kueue.Workload {
	wl = wl.DeepCopy()
	wl.Status.AdmissionChecks = append(wl.Status.AdmissionChecks, kueue.AdmissionCheckState{
		Name: "provisioning", State: state, Message: "waiting for nodes", LastTransitionTime: metav1.NewTime(now),
		PodSetUpdates: []kueue.PodSetUpdate{{Name: "leader", Annotations: map[string]string{"provisioning/request": "req-1"},
			NodeSelector: map[string]string{"provisioning/pool": "p1"}}},
	})
	return wl
}

func wantSuspended(t *testing.T, pcs *copsev1alpha1.PodCliqueSet, want bool) {
	t.Helper()
	if pcs.IsSuspended() != want {
		t.Errorf("spec.suspend = %v, want %v", pcs.Spec.Suspend, want)
	}
}

func wantCondition(t *testing.T, wl *kueue.Workload, conditionType string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	cond := meta.FindStatusCondition(wl.Status.Conditions, conditionType)
	if cond == nil || cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, message) {
		t.Errorf("%s = %+v, want %s/%s with %q", conditionType, cond, status, reason, message)
	}
}

// wantTemplatesOf: pcs's clique templates carry the scheduling directives
// of want's (what the Workload was built from).
func wantTemplatesOf(t *testing.T, pcs, want *copsev1alpha1.PodCliqueSet) {
	t.Helper()
	for i, clique := range pcs.Spec.Template.Cliques {
		w := want.Spec.Template.Cliques[i]
		if _, merged := clique.Labels[PodSetLabel]; merged || len(clique.Spec.PodSpec.Tolerations) != len(w.Spec.PodSpec.Tolerations) ||
			len(clique.Spec.PodSpec.NodeSelector) != len(w.Spec.PodSpec.NodeSelector) || clique.Labels["app"] != w.Labels["app"] {
			t.Errorf("clique %s: labels %v, nodeSelector %v, tolerations %v; want them as before the admission",
				clique.Name, clique.Labels, clique.Spec.PodSpec.NodeSelector, clique.Spec.PodSpec.Tolerations)
		}
	}
}
