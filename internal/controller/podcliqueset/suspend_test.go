package podcliqueset

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestDecideSuspensions(t *testing.T) {
	replicas := func(succeeded ...bool) []replicaAssessment {
		var out []replicaAssessment
		for i, s := range succeeded {
			out = append(out, replicaAssessment{index: i, succeeded: s, breached: !s})
		}
		return out
	}
	cases := []struct {
		name       string
		replicas   []replicaAssessment
		inProgress map[int]bool
		currentRun map[int]bool
		want       []int
	}{
		{name: "every running replica", replicas: replicas(false, false), currentRun: map[int]bool{0: true, 1: true}, want: []int{0, 1}},
		{name: "a succeeded replica is left alone", replicas: replicas(true, false), currentRun: map[int]bool{0: true, 1: true}, want: []int{1}},
		{name: "a replica being recreated is not recreated again", replicas: replicas(false, false),
			inProgress: map[int]bool{0: true}, currentRun: map[int]bool{0: true, 1: true}, want: []int{1}},
		{name: "a replica whose run is gone (suspended already, or created suspended)", replicas: replicas(false, false),
			currentRun: map[int]bool{1: true}, want: []int{1}},
		{name: "nothing to suspend", replicas: replicas(false, true), currentRun: map[int]bool{1: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := decideSuspensions(c.replicas, c.inProgress, c.currentRun); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestLingeringPods(t *testing.T) {
	pod := func(name string, replica int) podstate.Summary { return podstate.Summary{Name: name, Replica: replica} }
	active := []podstate.Summary{pod("r0-worker", 0), pod("r1-worker", 1), pod("r2-worker", 2)}
	pcsWith := func(suspended bool, succeeded string, conditions ...metav1.Condition) *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{}
		pcs.Spec.Replicas = 3
		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
		pcs.Spec.Suspend = ptr.To(suspended)
		pcs.Status.SucceededReplicaIndexes = succeeded
		pcs.Status.Conditions = conditions
		return pcs
	}
	cases := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want []string
	}{
		{name: "suspended: the pods of replicas that succeeded", pcs: pcsWith(true, "0,2"), want: []string{"r0-worker", "r2-worker"}},
		{name: "running: lingering pods keep running until every replica succeeded", pcs: pcsWith(false, "0,2")},
		{name: "suspended, no replica succeeded: the recreations take every pod", pcs: pcsWith(true, "")},
		{name: "ended: the ended workload's termination takes them", pcs: pcsWith(true, "0",
			metav1.Condition{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range lingeringPods(lifecycle.RecordsOf(c.pcs), active) {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestSuspendedCondition(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	withCondition := func(suspend *bool, status metav1.ConditionStatus, reason string) *copsev1alpha1.PodCliqueSet {
		pcs := &copsev1alpha1.PodCliqueSet{}
		pcs.Generation = 3
		pcs.Spec.Suspend = suspend
		if status != "" {
			pcs.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuspended, Status: status, Reason: reason, LastTransitionTime: earlier}}
		}
		return pcs
	}
	cases := []struct {
		name       string
		pcs        *copsev1alpha1.PodCliqueSet
		activePods int
		want       *metav1.Condition
		message    string
	}{
		{name: "never suspended", pcs: withCondition(nil, "", "")},
		{name: "suspend false, never suspended", pcs: withCondition(ptr.To(false), "", "")},
		{name: "suspended, pods going away", pcs: withCondition(ptr.To(true), "", ""), activePods: 3,
			want:    &metav1.Condition{Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonSuspended, LastTransitionTime: metav1.NewTime(t0)},
			message: "3 pod(s) are still going away"},
		{name: "suspended, every pod gone", pcs: withCondition(ptr.To(true), metav1.ConditionTrue, copsev1alpha1.ReasonSuspended),
			want:    &metav1.Condition{Status: metav1.ConditionTrue, Reason: copsev1alpha1.ReasonSuspended, LastTransitionTime: metav1.NewTime(t0)},
			message: "no pod is left"},
		{name: "resumed", pcs: withCondition(ptr.To(false), metav1.ConditionTrue, copsev1alpha1.ReasonSuspended), activePods: 1,
			want:    &metav1.Condition{Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonResumed, LastTransitionTime: metav1.NewTime(t0)},
			message: "resumed"},
		{name: "resumed by unsetting suspend", pcs: withCondition(nil, metav1.ConditionTrue, copsev1alpha1.ReasonSuspended),
			want:    &metav1.Condition{Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonResumed, LastTransitionTime: metav1.NewTime(t0)},
			message: "resumed"},
		{name: "resumed earlier: kept", pcs: withCondition(nil, metav1.ConditionFalse, copsev1alpha1.ReasonResumed),
			want:    &metav1.Condition{Status: metav1.ConditionFalse, Reason: copsev1alpha1.ReasonResumed, LastTransitionTime: metav1.NewTime(t0)},
			message: "resumed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := suspendedCondition(c.pcs, c.activePods, t0)
			if (got == nil) != (c.want == nil) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if got == nil {
				return
			}
			if got.Type != copsev1alpha1.ConditionTypeSuspended || got.Status != c.want.Status || got.Reason != c.want.Reason ||
				got.ObservedGeneration != 3 || !strings.Contains(got.Message, c.message) {
				t.Errorf("got %+v, want %+v with a message containing %q", got, c.want, c.message)
			}
			// Applied to the previous conditions, the transition time moves
			// only when the status changes.
			conditions := slices.Clone(c.pcs.Status.Conditions)
			meta.SetStatusCondition(&conditions, *got)
			applied := meta.FindStatusCondition(conditions, copsev1alpha1.ConditionTypeSuspended)
			previous := meta.FindStatusCondition(c.pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuspended)
			wantTransition := t0
			if previous != nil && previous.Status == got.Status {
				wantTransition = earlier.Time
			}
			if !applied.LastTransitionTime.Time.Equal(wantTransition) {
				t.Errorf("transition time %v, want %v", applied.LastTransitionTime, wantTransition)
			}
		})
	}
}

func TestComputeStartTime(t *testing.T) {
	recorded := t0.Add(-time.Hour)
	resumed := t0.Add(-10 * time.Minute)
	started := func(index int, at time.Time) replicaAssessment {
		return replicaAssessment{index: index, started: true, startedAt: at}
	}
	succeededBefore := replicaAssessment{index: 1, succeeded: true, startedAt: t0.Add(-2 * time.Hour)}
	cases := []struct {
		name string
		in   startTimeInputs
		want *time.Time
	}{
		{name: "nothing started", in: startTimeInputs{replicas: []replicaAssessment{{index: 0}}, now: t0}},
		{name: "kept once set", in: startTimeInputs{recorded: &recorded, replicas: []replicaAssessment{started(0, t0)}, now: t0}, want: &recorded},
		{name: "the earliest container start", in: startTimeInputs{replicas: []replicaAssessment{started(0, t0.Add(-time.Minute)), started(1, t0.Add(-2*time.Minute))}, now: t0},
			want: ptr.To(t0.Add(-2 * time.Minute))},
		{name: "a start in the future (clock skew) is now", in: startTimeInputs{replicas: []replicaAssessment{started(0, t0.Add(time.Minute))}, now: t0}, want: &t0},
		{name: "suspended: not set while pods of the run still start", in: startTimeInputs{suspended: true, replicas: []replicaAssessment{started(0, t0)}, now: t0}},
		{name: "suspended: a recorded start is kept (cleared by status once no pod is left)", in: startTimeInputs{suspended: true, recorded: &recorded, now: t0}, want: &recorded},
		{name: "resumed: the new run's start", in: startTimeInputs{resumedAt: resumed, replicas: []replicaAssessment{started(0, t0.Add(-time.Minute))}, now: t0},
			want: ptr.To(t0.Add(-time.Minute))},
		{name: "resumed: a replica that succeeded before the suspension counts from the resume", in: startTimeInputs{resumedAt: resumed,
			replicas: []replicaAssessment{{index: 0}, succeededBefore}, now: t0}, want: &resumed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := computeStartTime(c.in)
			if (got == nil) != (c.want == nil) || (got != nil && !got.Equal(*c.want)) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestDecideWhileSuspended: a suspended workload's only decisions are its
// suspensions; they consume no restart, record no failure and no root
// cause, whatever the replicas show; an ended workload is not suspended.
func TestDecideWhileSuspended(t *testing.T) {
	hour := time.Hour
	start := t0.Add(-2 * hour)
	failed := podstate.Summary{Name: "job-0-worker-x", Phase: corev1.PodFailed, Failure: &podstate.Failure{Container: "train", ExitCode: 1}}
	replicas := []replicaAssessment{
		{index: 0, breached: true, breachedSince: t0.Add(-time.Minute), firstFailure: &failed},
		{index: 1, succeeded: true, succeededAt: t0},
		{index: 2, available: true},
	}
	cases := []struct {
		name     string
		workload copsev1alpha1.WorkloadType
		ended    bool
		want     []int
	}{
		{name: "training past its maxRuntime with a failed replica and no budget", workload: copsev1alpha1.WorkloadTypeTraining, want: []int{0, 2}},
		{name: "inference with a breached replica", workload: copsev1alpha1.WorkloadTypeInference, want: []int{0, 2}},
		{name: "an ended training workload is not suspended", workload: copsev1alpha1.WorkloadTypeTraining, ended: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := &copsev1alpha1.PodCliqueSet{}
			pcs.Spec.WorkloadType = c.workload
			pcs.Spec.Suspend = ptr.To(true)
			pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Second}
			pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRuntime: &metav1.Duration{Duration: hour}, MaxRestarts: ptr.To[int32](0)}
			pcs.Status.RestartCount = 3
			if c.ended {
				pcs.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuccessCriteriaMet, Status: metav1.ConditionTrue}}
			}
			d := decide(pcs, lifecycle.RecordsOf(pcs), replicas, nil, map[int]bool{0: true, 1: true, 2: true}, &start, t0)
			if c.ended {
				if d.reason == copsev1alpha1.RecreationReasonSuspension || len(d.recreate) > 0 || d.failReason != "" {
					t.Fatalf("an ended workload got %+v", d)
				}
				return
			}
			if d.reason != copsev1alpha1.RecreationReasonSuspension || !slices.Equal(d.recreate, c.want) {
				t.Errorf("recreate %v for %s, want %v for Suspension", d.recreate, d.reason, c.want)
			}
			if d.restartCount != 3 || d.failReason != "" || d.causeReplica != -1 || d.requeueAfter != 0 {
				t.Errorf("a suspension decided %+v; want restartCount 3 and nothing else", d)
			}
		})
	}
}
