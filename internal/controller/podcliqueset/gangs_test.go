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
