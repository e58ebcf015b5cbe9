package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func TestMayCreatePods(t *testing.T) {
	training, inference := copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.WorkloadTypeInference
	failed := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: copsev1alpha1.ConditionTypeFailed, Status: status, Reason: copsev1alpha1.ReasonMaxRestartsExceeded}}
	}
	now := metav1.Now()
	recreating := []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 2}}
	recreated := []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 2, CompletedAt: &now}}
	cases := []struct {
		name        string
		missing     bool
		deleting    bool
		suspended   bool
		workload    copsev1alpha1.WorkloadType
		phase       copsev1alpha1.PodCliqueSetPhase
		conditions  []metav1.Condition
		recreations []copsev1alpha1.ReplicaRecreation
		succeeded   string
		// admitted is the status of the Admitted condition; "" for none.
		admitted     metav1.ConditionStatus
		replica      int
		attempt      int
		want         Reason
		wantTraining bool
	}{
		{name: "training, running", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning},
		{name: "training, no phase yet", workload: training},
		{name: "training, succeeded", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, want: ReasonEnded},
		{name: "training, failed", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseFailed, want: ReasonEnded},
		{name: "training, Failed condition before the phase", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			conditions: failed(metav1.ConditionTrue), want: ReasonEnded},
		{name: "training, Failed condition False", workload: training, conditions: failed(metav1.ConditionFalse)},
		{name: "inference ignores a phase", workload: inference, phase: copsev1alpha1.PodCliqueSetPhaseFailed, conditions: failed(metav1.ConditionTrue)},
		{name: "unset workload type is inference", phase: copsev1alpha1.PodCliqueSetPhaseSucceeded},
		{name: "not found", missing: true, want: ReasonUnknownWorkload},
		{name: "being deleted", workload: inference, deleting: true, want: ReasonDeleting},
		{name: "the replica is being recreated", workload: training, recreations: recreating, replica: 1, attempt: 2, want: ReasonRecreating},
		{name: "another replica is being recreated", workload: training, recreations: recreating, replica: 0},
		{name: "an object of the previous run", workload: training, recreations: recreated, replica: 1, attempt: 1, want: ReasonSuperseded},
		{name: "an object of the current run after the recreation", workload: training, recreations: recreated, replica: 1, attempt: 2},
		{name: "the PodCliqueSet asks for itself (attempt -1)", workload: training, recreations: recreated, replica: 1, attempt: -1},
		{name: "training, suspended", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning, suspended: true, want: ReasonSuspended},
		{name: "inference, suspended", workload: inference, suspended: true, want: ReasonSuspended},
		{name: "suspended while being recreated: suspension is the reason", workload: training, suspended: true,
			recreations: recreating, replica: 1, attempt: 2, want: ReasonSuspended},
		{name: "training, SuccessCriteriaMet before the phase", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			conditions: []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonSuccessPolicy}},
			want:       ReasonEnded},
		{name: "the replica succeeded (met the success policy) while others run", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning,
			succeeded: "0,2", replica: 2, want: ReasonSucceeded},
		{name: "another replica succeeded", workload: training, phase: copsev1alpha1.PodCliqueSetPhaseRunning, succeeded: "0,2", replica: 1},
		{name: "suspended after the replica succeeded: its result is kept", workload: training, suspended: true, succeeded: "0", want: ReasonSucceeded},
		{name: "a malformed record counts no replica", workload: training, succeeded: "x", replica: 0},
		{name: "queued in Kueue: suspended, not admitted", workload: training, suspended: true, admitted: metav1.ConditionFalse, want: ReasonNotAdmitted},
		{name: "admitted, not yet resumed: a suspension", workload: training, suspended: true, admitted: metav1.ConditionTrue, want: ReasonSuspended},
		{name: "not admitted and not suspended: Kueue's admission reaches pods as spec.suspend only", workload: inference,
			admitted: metav1.ConditionFalse},
		{name: "the success of the replica comes before the queue", workload: training, suspended: true, admitted: metav1.ConditionFalse,
			succeeded: "0", want: ReasonSucceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pcs *copsev1alpha1.PodCliqueSet
			if !c.missing {
				pcs = &copsev1alpha1.PodCliqueSet{}
				pcs.Spec.WorkloadType = c.workload
				pcs.Status.Phase = c.phase
				pcs.Status.Conditions = c.conditions
				pcs.Status.ReplicaRecreations = c.recreations
				pcs.Spec.Replicas = 3
				pcs.Status.SucceededReplicaIndexes = c.succeeded
				if c.deleting {
					pcs.DeletionTimestamp = &now
				}
				pcs.Spec.Suspend = &c.suspended
				if c.admitted != "" {
					pcs.Status.Conditions = append(pcs.Status.Conditions, metav1.Condition{Type: copsev1alpha1.ConditionTypeAdmitted, Status: c.admitted})
				}
			}
			if got := MayCreatePods(ReplicaStateOf(pcs, c.replica, c.attempt)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestEveryReasonHasAMessage: each reason reads as a sentence too.
func TestEveryReasonHasAMessage(t *testing.T) {
	for _, r := range []Reason{ReasonUnknownWorkload, ReasonDeleting, ReasonEnded, ReasonSucceeded, ReasonNotAdmitted,
		ReasonSuspended, ReasonSuperseded, ReasonRecreating, ReasonRunCreated} {
		if r.Message() == "" {
			t.Errorf("reason %s has no message", r)
		}
	}
	if Reason("").Message() != "" {
		t.Error("no reason has a message")
	}
}

func TestRecordsAttempt(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 1, Attempt: 3}}
	rec := RecordsOf(pcs)
	if rec.Attempt(0) != 0 || rec.Attempt(1) != 3 {
		t.Errorf("attempts %d %d, want 0 3", rec.Attempt(0), rec.Attempt(1))
	}
}

func TestMayCreatePodsChanged(t *testing.T) {
	now := metav1.Now()
	base := func() *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{}
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Status.Phase = copsev1alpha1.PodCliqueSetPhaseRunning
		pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1}}
		return pcs
	}
	cases := []struct {
		name   string
		change func(*copsev1alpha1.PodCliqueSet)
		want   bool
	}{
		{name: "nothing", change: func(*copsev1alpha1.PodCliqueSet) {}},
		{name: "another status field", change: func(p *copsev1alpha1.PodCliqueSet) { p.Status.AvailableReplicas = 1 }},
		{name: "a recreation completes", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.ReplicaRecreations[0].CompletedAt = &now
		}, want: true},
		{name: "a new attempt of the replica", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.ReplicaRecreations[0].Attempt = 2
		}, want: true},
		{name: "a recreation of another replica", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.ReplicaRecreations = append(p.Status.ReplicaRecreations, copsev1alpha1.ReplicaRecreation{ReplicaIndex: 1, Attempt: 1})
		}, want: true},
		{name: "the workload ends", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.Phase = copsev1alpha1.PodCliqueSetPhaseSucceeded
		}, want: true},
		{name: "its deletion starts", change: func(p *copsev1alpha1.PodCliqueSet) { p.DeletionTimestamp = &now }, want: true},
		{name: "it is suspended", change: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(true) }, want: true},
		{name: "a replica succeeds", change: func(p *copsev1alpha1.PodCliqueSet) { p.Status.SucceededReplicaIndexes = "0" }, want: true},
		{name: "suspend set to false, as it was unset", change: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(false) }},
		{name: "Kueue holds it: suspended and not admitted", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Suspend = ptr.To(true)
			p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse}}
		}, want: true},
		{name: "not admitted while running: nothing changes for its pods", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeAdmitted, Status: metav1.ConditionFalse}}
		}},
		{name: "the success policy is met", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue}}
		}, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, cur := base(), base()
			c.change(cur)
			if got := MayCreatePodsChanged(old, cur); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestMayCreatePodCliques(t *testing.T) {
	cases := []struct {
		name  string
		state ReplicaState
		want  Reason
	}{
		{name: "a run not yet whole gets its PodCliques", state: ReplicaState{Known: true}},
		{name: "a whole run gets none again: a missing one was deleted from outside", state: ReplicaState{Known: true, RunCreated: true},
			want: ReasonRunCreated},
		{name: "MayCreatePods' reasons come first", state: ReplicaState{Known: true, RunCreated: true, Suspended: true}, want: ReasonSuspended},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MayCreatePodCliques(c.state); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
