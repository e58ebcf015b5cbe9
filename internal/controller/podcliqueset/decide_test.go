package podcliqueset

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/scheduler"
	"github.com/copse-dev/copse/internal/topology"
)

func TestOverdueBarriers(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	rec := func(replica int32, inPlace bool, started time.Duration, completed, lifted *metav1.Time) copsev1alpha1.ReplicaRecreation {
		return copsev1alpha1.ReplicaRecreation{ReplicaIndex: replica, InPlace: inPlace, StartedAt: *at(started), CompletedAt: completed, BarrierLiftedAt: lifted}
	}
	const timeout = 5 * time.Minute
	tests := []struct {
		name        string
		recs        []copsev1alpha1.ReplicaRecreation
		skip        map[int]bool
		wantReplica []int
		wantRequeue time.Duration
	}{
		{name: "no restart in place", recs: []copsev1alpha1.ReplicaRecreation{rec(0, false, time.Hour, at(time.Hour), nil)}},
		{name: "barrier lifted", recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Hour, at(time.Hour), at(time.Hour))}},
		{name: "held, not yet overdue: look again when it is",
			recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Minute, at(time.Minute), nil)}, wantRequeue: 4 * time.Minute},
		{name: "overdue: recreated",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, timeout, at(time.Minute), nil)}, wantReplica: []int{1}},
		{name: "overdue but the old run not gone yet: waits for it",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, time.Hour, nil, nil)}, wantRequeue: minRequeue},
		{name: "overdue but decided otherwise this pass",
			recs: []copsev1alpha1.ReplicaRecreation{rec(1, true, time.Hour, at(time.Hour), nil)}, skip: map[int]bool{1: true}},
		{name: "the earliest deadline is the requeue",
			recs: []copsev1alpha1.ReplicaRecreation{rec(0, true, time.Minute, at(time.Minute), nil), rec(1, true, 3*time.Minute, at(time.Minute), nil),
				rec(2, true, 10*time.Minute, at(time.Minute), nil)},
			wantReplica: []int{2}, wantRequeue: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := overdueBarriers(tt.recs, tt.skip, timeout, now)
			if !slices.Equal(got.recreate, tt.wantReplica) {
				t.Errorf("recreate %v, want %v", got.recreate, tt.wantReplica)
			}
			if got.requeueAfter != tt.wantRequeue {
				t.Errorf("requeueAfter %s, want %s", got.requeueAfter, tt.wantRequeue)
			}
		})
	}
}

func TestDecideBarriersLeavesEndedWorkloadsAndOtherDecisions(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	old := metav1.NewTime(now.Add(-time.Hour))
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{
		{ReplicaIndex: 0, InPlace: true, StartedAt: old, CompletedAt: &old},
		{ReplicaIndex: 1, InPlace: true, StartedAt: old, CompletedAt: &old},
	}
	if got := decideBarriers(pcs, passDecision{recreate: []int{0}}, placementDecision{}, 5*time.Minute, now); !slices.Equal(got.recreate, []int{1}) {
		t.Errorf("with replica 0 restarted this pass: recreate %v, want [1]", got.recreate)
	}
	if got := decideBarriers(pcs, passDecision{}, placementDecision{}, 0, now); len(got.recreate) != 0 {
		t.Errorf("with no timeout: recreate %v, want none", got.recreate)
	}
	if got := decideBarriers(pcs, passDecision{ended: true}, placementDecision{}, 5*time.Minute, now); len(got.recreate) != 0 {
		t.Errorf("ended workload: recreate %v, want none", got.recreate)
	}
}

func podGroup(name string, replica, attempt, minCount int, cond *metav1.Condition) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{}
	pg.Name = name
	pg.Labels = map[string]string{labels.ReplicaKey: strconv.Itoa(replica), labels.AttemptKey: strconv.Itoa(attempt)}
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(minCount)}
	if cond != nil {
		pg.Status.Conditions = []metav1.Condition{*cond}
	}
	return pg
}

// gangClique is a PodClique of replica 0, attempt attempt, in gang "job-0",
// with its pods: placed ones at the given times, and unplaced ones.
func gangClique(name string, attempt, minAvailable int, placedAt []time.Time, unplaced int) (*copsev1alpha1.PodClique, []podstate.Summary) {
	pclq := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{
		labels.ReplicaKey: "0", labels.AttemptKey: strconv.Itoa(attempt), labels.PodGangKey: "job-0"}}}
	pclq.Spec.Replicas = int32(len(placedAt) + unplaced)
	pclq.Spec.MinAvailable = ptr.To(int32(minAvailable))
	var pods []podstate.Summary
	for i := range len(placedAt) + unplaced {
		p := podstate.Summary{Name: name + "-" + strconv.Itoa(i), PodClique: name, ControllerUID: pclq.UID, Replica: 0, Attempt: attempt,
			Index: i, HasIndex: true, Phase: corev1.PodPending}
		if i < len(placedAt) {
			p.Scheduled, p.ScheduledAt, p.Phase = true, placedAt[i], corev1.PodRunning
		} else {
			p.Unschedulable = "0/8 nodes are available: 8 node(s) didn't match Pod's node affinity/selector."
		}
		pods = append(pods, p)
	}
	return pclq, pods
}

func gangObserved(pgs []*schedulingv1beta1.PodGroup, cliques ...func() (*copsev1alpha1.PodClique, []podstate.Summary)) *observed {
	obs := &observed{byKind: map[string][]client.Object{}}
	for _, pg := range pgs {
		obs.byKind[scheduler.PodGroupKind] = append(obs.byKind[scheduler.PodGroupKind], pg)
	}
	for _, c := range cliques {
		pclq, pods := c()
		obs.podCliques = append(obs.podCliques, pclq)
		obs.pods = append(obs.pods, pods...)
	}
	return obs.categorise()
}

func TestGangFactsOf(t *testing.T) {
	placed := []time.Time{t0.Add(-3 * time.Second), t0.Add(-2 * time.Second), t0.Add(-time.Second), t0}
	scheduled := &metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t0.Add(-10 * time.Minute))}
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.Replicas = 1
	workers := func() (*copsev1alpha1.PodClique, []podstate.Summary) {
		return gangClique("job-0-worker", 0, 3, placed, 0)
	}
	noLeader := func() (*copsev1alpha1.PodClique, []podstate.Summary) { return gangClique("job-0-leader", 0, 1, nil, 1) }
	leader := func() (*copsev1alpha1.PodClique, []podstate.Summary) {
		return gangClique("job-0-leader", 0, 1, placed[:1], 0)
	}

	t.Run("the workers fill minCount, the leader is not placed: incomplete, naming the leader", func(t *testing.T) {
		got := gangFactsOf(pcs, gangObserved([]*schedulingv1beta1.PodGroup{podGroup("job-0", 0, 0, 4, scheduled)}, workers, noLeader),
			scheduler.PodGroupKind, nil)
		if len(got) != 1 || !got[0].incomplete() || got[0].placed != 4 || !got[0].placedAt.Equal(t0) {
			t.Fatalf("got %+v; want one gang placed incomplete at %v", got, t0)
		}
		if want := []string{"job-0-leader (0 of minAvailable 1 placed)"}; !slices.Equal(got[0].short, want) {
			t.Errorf("short %v, want %v", got[0].short, want)
		}
	})
	t.Run("every clique at its minAvailable: placed whole", func(t *testing.T) {
		got := gangFactsOf(pcs, gangObserved([]*schedulingv1beta1.PodGroup{podGroup("job-0", 0, 4, 4, scheduled)}, workers, leader),
			scheduler.PodGroupKind, nil)
		if len(got) != 1 || !got[0].isPlaced() || got[0].incomplete() {
			t.Errorf("got %+v; want placed whole", got)
		}
	})
	t.Run("a verdict older than the run (a PodGroup kept by a suspension) does not speak for it", func(t *testing.T) {
		resumed := pcs.DeepCopy()
		resumed.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuspended, Status: metav1.ConditionFalse,
			Reason: copsev1alpha1.ReasonResumed, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))}}
		resumed.Status.ReplicaRecreations = []copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1,
			Reason: copsev1alpha1.RecreationReasonSuspension, CompletedAt: ptr.To(metav1.NewTime(t0.Add(-2 * time.Minute)))}}
		pending := func() (*copsev1alpha1.PodClique, []podstate.Summary) { return gangClique("job-0-worker", 1, 3, nil, 0) }
		obs := gangObserved([]*schedulingv1beta1.PodGroup{podGroup("job-0", 0, 0, 4, scheduled)}, pending)
		obs.records = lifecycle.RecordsOf(resumed)
		got := gangFactsOf(resumed, obs, scheduler.PodGroupKind, nil)
		if len(got) != 1 || got[0].verdict != nil || got[0].isPlaced() {
			t.Errorf("got %+v; want the stale verdict dropped and the gang not placed", got)
		}
	})
	t.Run("a scaled gang of a packed replica is placed after its base gang", func(t *testing.T) {
		scaled := podGroup("job-0-serve-2", 0, 0, 2, nil)
		scaled.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: "job", TemplateName: "scaled-serve"}
		base := podGroup("job-0", 0, 0, 4, nil)
		base.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: "job", TemplateName: "base"}
		named := pcs.DeepCopy()
		named.Name = "job"
		obs := gangObserved([]*schedulingv1beta1.PodGroup{base, scaled})
		obs.packing = topology.Resolved{Replica: topology.Pack{RequiredKey: "example.com/block"}}
		got := gangFactsOf(named, obs, scheduler.PodGroupKind, nil)
		if len(got) != 2 || got[0].after != "" || got[1].after != "job-0" {
			t.Errorf("got %+v; want the scaled gang after job-0, the base gang after none", got)
		}
		obs.packing = topology.Resolved{}
		if got := gangFactsOf(named, obs, scheduler.PodGroupKind, nil); got[1].after != "" {
			t.Errorf("unpacked replica: got %+v; want the scaled gang after none", got)
		}
	})
	t.Run("none for a replica being recreated, a basic group, or while suspended", func(t *testing.T) {
		basic := podGroup("job-0-prelude", 0, 0, 1, nil)
		basic.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
		obs := gangObserved([]*schedulingv1beta1.PodGroup{podGroup("job-0", 0, 0, 4, scheduled), basic}, workers)
		if got := gangFactsOf(pcs, obs, scheduler.PodGroupKind, map[int]bool{0: true}); len(got) != 0 {
			t.Errorf("being recreated: got %+v", got)
		}
		suspended := pcs.DeepCopy()
		suspended.Spec.Suspend = ptr.To(true)
		if got := gangFactsOf(suspended, obs, scheduler.PodGroupKind, nil); len(got) != 0 {
			t.Errorf("suspended: got %+v", got)
		}
		obs.byKind[scheduler.PodGroupKind] = obs.byKind[scheduler.PodGroupKind][1:]
		obs.categorise()
		if got := gangFactsOf(pcs, obs, scheduler.PodGroupKind, nil); len(got) != 0 {
			t.Errorf("basic group: got %+v", got)
		}
	})
}

func TestGangsScheduledCondition(t *testing.T) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	unschedulable := &metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
		Reason: schedulingv1beta1.PodGroupReasonUnschedulable, Message: "0/16 nodes are available: " + strings.Repeat("x", 400)}
	whole := gangFacts{name: "llm-0", minCount: 2, placed: 2}
	incomplete := gangFacts{name: "llm-1", replica: 1, minCount: 4, placed: 4, placedAt: t0, short: []string{"llm-1-leader (0 of minAvailable 1 placed)"}}
	cases := []struct {
		name    string
		gangs   []gangFacts
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "no gang: absent"},
		{name: "all placed", gangs: []gangFacts{whole, {name: "llm-1", minCount: 1, placed: 3}},
			status: metav1.ConditionTrue, reason: "AllGangsScheduled", message: "all 2 gangs were placed"},
		{name: "waiting for a verdict", gangs: []gangFacts{whole, {name: "llm-1", minCount: 2, placed: 1}},
			status: metav1.ConditionUnknown, reason: "GangsPending", message: "1 of 2 gangs placed; waiting for the scheduler to place llm-1"},
		{name: "an unplaceable gang is quoted, trimmed", gangs: []gangFacts{{name: "llm-0", minCount: 2}, {name: "llm-1", minCount: 2, verdict: unschedulable}},
			status: metav1.ConditionFalse, reason: "Unschedulable",
			message: "the scheduler cannot place 1 of 2 gangs: llm-1 (Unschedulable: 0/16 nodes are available: " + strings.Repeat("x", 300-len("0/16 nodes are available: ")) + "...)"},
		{name: "a pod's scheduler message when the gang has no verdict of its run", gangs: []gangFacts{{name: "llm-0", minCount: 2, unschedulable: "0/8 nodes are available"}},
			status: metav1.ConditionFalse, reason: "Unschedulable", message: "the scheduler cannot place 1 of 1 gangs: llm-0 (Unschedulable: 0/8 nodes are available)"},
		{name: "a scaled gang held in its base gang's domain waits for the base gang, whatever its own verdict says",
			gangs:  []gangFacts{{name: "llm-0", minCount: 2, placed: 1}, {name: "llm-0-serve-2", minCount: 2, verdict: unschedulable, after: "llm-0"}},
			status: metav1.ConditionUnknown, reason: "GangsPending",
			message: "0 of 2 gangs placed; waiting for the scheduler to place llm-0, llm-0-serve-2 (after its base gang llm-0, in whose domain it is held)"},
		{name: "once the base gang is placed, a scaled gang with no room in its domain is unplaceable", gangs: []gangFacts{whole, {name: "llm-0-serve-2", minCount: 2, verdict: unschedulable, after: "llm-0"}},
			status: metav1.ConditionFalse, reason: "Unschedulable",
			message: "the scheduler cannot place 1 of 2 gangs: llm-0-serve-2 (Unschedulable: 0/16 nodes are available: " + strings.Repeat("x", 300-len("0/16 nodes are available: ")) + "...)"},
		{name: "placed incomplete: names the clique and when its pods are recreated", gangs: []gangFacts{whole, incomplete},
			status: metav1.ConditionFalse, reason: "GangPlacedIncomplete",
			message: "1 of 2 gangs hold nodes without a whole placement: llm-1, placed without enough pods of llm-1-leader (0 of minAvailable 1 placed); " +
				"its pods are recreated at 2026-11-21T06:05:00Z unless they are placed by then"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gangsScheduledCondition(pcs, tc.gangs, 5*time.Minute, t0)
			if tc.status == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("got %+v\nwant %s/%s %q", got, tc.status, tc.reason, tc.message)
			}
		})
	}
}

func TestDecideIncompletePlacements(t *testing.T) {
	incomplete := func(replica int, placedAt time.Time) gangFacts {
		return gangFacts{name: "g" + strconv.Itoa(replica), replica: replica, minCount: 2, placed: 2, placedAt: placedAt, short: []string{"leader"}}
	}
	cases := []struct {
		name        string
		gangs       []gangFacts
		skip        map[int]bool
		want        []int
		wantRequeue time.Duration
	}{
		{name: "placed whole: nothing", gangs: []gangFacts{{replica: 0, minCount: 2, placed: 2}}},
		{name: "incomplete for the timeout: recreated", gangs: []gangFacts{incomplete(0, t0.Add(-time.Minute))}, want: []int{0}},
		{name: "incomplete for less: looked at again when due", gangs: []gangFacts{incomplete(0, t0.Add(-20*time.Second))}, wantRequeue: 40 * time.Second},
		{name: "two gangs of one replica: recreated once", gangs: []gangFacts{incomplete(1, t0.Add(-time.Hour)), incomplete(1, t0.Add(-time.Hour))}, want: []int{1}},
		{name: "a skipped replica (being recreated, succeeded, updated)", gangs: []gangFacts{incomplete(0, t0.Add(-time.Hour))}, skip: map[int]bool{0: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decideIncompletePlacements(tc.gangs, tc.skip, time.Minute, t0)
			if diff := cmp.Diff(tc.want, got.recreate); diff != "" || got.requeueAfter != tc.wantRequeue {
				t.Errorf("recreate (-want +got):\n%s requeueAfter %v, want %v", diff, got.requeueAfter, tc.wantRequeue)
			}
		})
	}
}

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

// decideTrainingCase is one row of TestDecideTraining; its inputs also seed
// FuzzDecideTraining.
type decideTrainingCase struct {
	name string
	in   trainingInputs
	want trainingDecision
}

func decideTrainingCases() []decideTrainingCase {
	hour := time.Hour
	start := t0
	breachedAt := func(idx int, since time.Time) replicaAssessment {
		return replicaAssessment{index: idx, breached: true, breachedSince: since}
	}
	ruled := func(a replicaAssessment, rule string, action copsev1alpha1.FailureRuleAction) replicaAssessment {
		a.verdict = lifecycle.RuleVerdict{Rule: rule, Action: action}
		return a
	}
	succeededAt := func(idx int, at time.Time) replicaAssessment {
		return replicaAssessment{index: idx, succeeded: true, succeededAt: at}
	}
	return []decideTrainingCase{
		{
			name: "healthy, no limit: nothing to do",
			in:   trainingInputs{replicas: []replicaAssessment{{index: 0, available: true}}, now: t0},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "failure with maxRestarts 0 fails at once",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, maxRestarts: 0, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 0},
		},
		{
			name: "failure within budget restarts the replica and counts once",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, restartCount: 1, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0}, restartCount: 2, causeReplica: 0},
		},
		{
			name: "only the failed replica restarts",
			in:   trainingInputs{replicas: []replicaAssessment{{index: 0, available: true}, breachedAt(1, t0)}, maxRestarts: 3, now: t0},
			want: trainingDecision{restart: []int{1}, restartCount: 1, causeReplica: 1},
		},
		{
			name: "two failures, budget for one: the second fails the workload, so the first's restart is neither made nor counted",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0), breachedAt(1, t0)}, maxRestarts: 1, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 1},
		},
		{
			name: "two failures, budget for both",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(1, t0), breachedAt(0, t0)}, maxRestarts: 2, now: t0},
			want: trainingDecision{restart: []int{0, 1}, restartCount: 2, causeReplica: 1},
		},
		{
			name: "a replica already restarting is not counted again",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, inProgress: map[int]bool{0: true}, restartCount: 1, maxRestarts: 1, now: t0},
			want: trainingDecision{restartCount: 1, causeReplica: -1},
		},
		{
			name: "a terminationDelay set by the user is honoured",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, maxRestarts: 1, terminationDelay: 30 * time.Second, now: t0.Add(10 * time.Second)},
			want: trainingDecision{requeueAfter: 20 * time.Second, causeReplica: -1},
		},
		{
			name: "before maxRuntime: requeue for the remainder",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(45 * time.Minute)},
			want: trainingDecision{requeueAfter: 15 * time.Minute, causeReplica: -1},
		},
		{
			name: "maxRuntime elapsed fails",
			in:   trainingInputs{maxRuntime: &hour, startTime: &start, now: t0.Add(hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "a breach after the deadline: the deadline came first",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(hour+time.Minute))}, maxRestarts: 5, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "a breach before the deadline, seen after it: the deadline fails the workload, the restart is neither made nor counted",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(30*time.Minute))}, maxRestarts: 5, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: 0},
		},
		{
			name: "a breach before the deadline with the budget spent, seen after it: MaxRestartsExceeded",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(30*time.Minute))}, restartCount: 2, maxRestarts: 2, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, restartCount: 2, causeReplica: 0},
		},
		{
			name: "success before the deadline, seen after it, is success",
			in:   trainingInputs{replicas: []replicaAssessment{succeededAt(0, t0.Add(59*time.Minute)), succeededAt(1, t0.Add(time.Hour))}, maxRuntime: &hour, startTime: &start, now: t0.Add(3 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "success after the deadline is not",
			in:   trainingInputs{replicas: []replicaAssessment{succeededAt(0, t0.Add(59*time.Minute)), succeededAt(1, t0.Add(61*time.Minute))}, maxRuntime: &hour, startTime: &start, now: t0.Add(3 * hour)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRuntimeExceeded, causeReplica: -1},
		},
		{
			name: "breaches are judged in the order they happened, not by replica",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0.Add(20*time.Minute)), breachedAt(1, t0.Add(10*time.Minute))}, maxRestarts: 1, now: t0.Add(30 * time.Minute)},
			want: trainingDecision{restart: nil, failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 0},
		},
		{
			name: "already failing: no new decision",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, failing: true, restartCount: 2, maxRestarts: 5, now: t0},
			want: trainingDecision{restartCount: 2, causeReplica: -1},
		},
		{
			name: "SuccessCriteriaMet: a lingering pod's failure restarts nothing",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, successCriteriaMet: true, restartCount: 1, maxRestarts: 5, now: t0},
			want: trainingDecision{restartCount: 1, causeReplica: -1},
		},
		{
			name: "SuccessCriteriaMet: maxRuntime no longer applies",
			in:   trainingInputs{successCriteriaMet: true, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "a replica that met the success policy is not restarted for a lingering pod's failure",
			in: trainingInputs{replicas: []replicaAssessment{{index: 0, succeeded: true, succeededAt: t0, breached: true, breachedSince: t0}, breachedAt(1, t0)},
				maxRestarts: 0, now: t0.Add(time.Minute)},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxRestartsExceeded, causeReplica: 1},
		},
		{
			name: "terminal: no new decision",
			in:   trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)}, terminal: true, maxRuntime: &hour, startTime: &start, now: t0.Add(2 * hour)},
			want: trainingDecision{causeReplica: -1},
		},
		{
			name: "a FailWorkload rule fails at once, with budget left, and names the rule",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "bug", copsev1alpha1.FailureActionFailWorkload)},
				maxRestarts: 5, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonFailedByRule, causeReplica: 0},
		},
		{
			name: "a RestartReplicaWithoutCount rule restarts without spending maxRestarts (0 here)",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount)},
				restartCount: 2, uncountedRestarts: 2, maxUncountedRestarts: 3, now: t0},
			want: trainingDecision{restartUncounted: []int{0}, restartCount: 3, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "uncounted restarts run out: MaxUncountedRestartsExceeded, counted budget untouched",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount)},
				restartCount: 3, uncountedRestarts: 3, maxRestarts: 5, maxUncountedRestarts: 3, now: t0},
			want: trainingDecision{failReason: copsev1alpha1.ReasonMaxUncountedRestartsExceeded, restartCount: 3, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "a counted restart compares only the counted part of restartCount with maxRestarts",
			in: trainingInputs{replicas: []replicaAssessment{breachedAt(0, t0)},
				restartCount: 4, uncountedRestarts: 3, maxRestarts: 2, maxUncountedRestarts: 10, now: t0},
			want: trainingDecision{restart: []int{0}, restartCount: 5, uncountedRestarts: 3, causeReplica: 0},
		},
		{
			name: "one uncounted and one counted restart in one pass, each by its own verdict",
			in: trainingInputs{replicas: []replicaAssessment{ruled(breachedAt(0, t0), "preempted", copsev1alpha1.FailureActionRestartReplicaWithoutCount),
				ruled(breachedAt(1, t0.Add(time.Second)), "crash", copsev1alpha1.FailureActionRestartReplica)},
				maxRestarts: 1, maxUncountedRestarts: 1, now: t0.Add(time.Minute)},
			want: trainingDecision{restart: []int{1}, restartUncounted: []int{0}, restartCount: 2, uncountedRestarts: 1, causeReplica: 1},
		},
	}
}

func TestDecideTraining(t *testing.T) {
	for _, c := range decideTrainingCases() {
		t.Run(c.name, func(t *testing.T) {
			got := decideTraining(c.in)
			if got.failReason != c.want.failReason || got.restartCount != c.want.restartCount || got.requeueAfter != c.want.requeueAfter {
				t.Fatalf("got fail=%q count=%d requeue=%v, want fail=%q count=%d requeue=%v (message %q)",
					got.failReason, got.restartCount, got.requeueAfter, c.want.failReason, c.want.restartCount, c.want.requeueAfter, got.failMessage)
			}
			if len(got.restart) != len(c.want.restart) || !slices.Equal(got.restartUncounted, c.want.restartUncounted) || got.uncountedRestarts != c.want.uncountedRestarts {
				t.Fatalf("restart %v uncounted %v (%d), want %v uncounted %v (%d)", got.restart, got.restartUncounted, got.uncountedRestarts,
					c.want.restart, c.want.restartUncounted, c.want.uncountedRestarts)
			}
			for i := range got.restart {
				if got.restart[i] != c.want.restart[i] {
					t.Fatalf("restart %v, want %v", got.restart, c.want.restart)
				}
			}
			if got.failReason != "" && got.failMessage == "" {
				t.Errorf("a failure needs a message")
			}
			if got.causeReplica != c.want.causeReplica {
				t.Errorf("cause replica %d, want %d", got.causeReplica, c.want.causeReplica)
			}
		})
	}
}

func TestComputePhase(t *testing.T) {
	P, R, S, F := copsev1alpha1.PodCliqueSetPhasePending, copsev1alpha1.PodCliqueSetPhaseRunning, copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed
	cases := []struct {
		name string
		in   phaseInputs
		want copsev1alpha1.PodCliqueSetPhase
	}{
		{"new workload is Pending", phaseInputs{training: true}, P},
		{"a replica whose pods started makes it Running, ready or not", phaseInputs{training: true, previous: P, started: true}, R},
		{"Running is kept while a replica restarts", phaseInputs{training: true, previous: R, activePods: 3}, R},
		{"all PodCliques succeeded", phaseInputs{training: true, previous: R, succeeded: true}, S},
		{"succeeded straight from Pending (fast pods)", phaseInputs{training: true, previous: P, succeeded: true}, S},
		{"failing waits for pods to be terminated", phaseInputs{training: true, previous: R, failing: true, activePods: 2}, R},
		{"failing with no pod left is Failed", phaseInputs{training: true, previous: R, failing: true}, F},
		{"failing wins over a success seen later", phaseInputs{training: true, previous: R, failing: true, succeeded: true}, F},
		{"Succeeded is terminal", phaseInputs{training: true, previous: S, failing: true}, S},
		{"Failed is terminal", phaseInputs{training: true, previous: F, started: true, succeeded: true}, F},
		{"Inference never succeeds", phaseInputs{previous: R, succeeded: true, started: true}, R},
		{"Inference never fails", phaseInputs{previous: R, failing: true}, R},
		{"Inference Pending until a replica runs", phaseInputs{}, P},
		{"SuccessCriteriaMet waits for the lingering pods", phaseInputs{training: true, previous: R, successCriteriaMet: true, activePods: 2}, R},
		{"SuccessCriteriaMet with no pod left is Succeeded", phaseInputs{training: true, previous: R, successCriteriaMet: true}, S},
		{"SuccessCriteriaMet is never Failed", phaseInputs{training: true, previous: R, successCriteriaMet: true, failing: true}, S},
		{"a met policy without its condition yet is not Succeeded", phaseInputs{training: true, previous: R, activePods: 2, started: true}, R},
		{"suspended, pods still going away: Running is kept", phaseInputs{training: true, previous: R, suspended: true, activePods: 2}, R},
		{"suspended with no pod left is Pending", phaseInputs{training: true, previous: R, suspended: true, started: true}, P},
		{"suspended Inference with no pod left is Pending", phaseInputs{previous: R, suspended: true}, P},
		{"suspended, all replicas succeeded: Succeeded", phaseInputs{training: true, previous: R, suspended: true, succeeded: true}, S},
		{"suspended and failing with no pod left: Failed", phaseInputs{training: true, previous: R, suspended: true, failing: true}, F},
		{"resumed: Running again once a replica started", phaseInputs{training: true, previous: P, started: true}, R},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := computePhase(c.in); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
