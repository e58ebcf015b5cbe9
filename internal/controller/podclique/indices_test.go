package podclique

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/copse-dev/copse/internal/podstate"
)

func TestPodsToCreate(t *testing.T) {
	cases := []struct {
		name     string
		desired  int
		occupied []int
		want     []int
	}{
		{"empty clique", 3, nil, []int{0, 1, 2}},
		{"complete clique", 3, []int{0, 1, 2}, nil},
		{"lowest free index first", 3, []int{0, 2}, []int{1}},
		{"holes are filled before growing", 4, []int{1, 3}, []int{0, 2}},
		{"indices above desired still count", 2, []int{5}, []int{0}},
		{"duplicates count once", 3, []int{1, 1}, []int{0, 2}},
		{"more than desired creates nothing", 1, []int{0, 1}, nil},
		{"zero replicas", 0, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, podsToCreate(c.desired, c.occupied)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsToDelete(t *testing.T) {
	cases := []struct {
		name       string
		surplus    int
		candidates []podstate.Summary
		want       []string
	}{
		{"nothing to delete", 0, []podstate.Summary{p(0), p(1)}, []string{}},
		{"highest index first", 2, []podstate.Summary{p(0), p(1), p(2), p(3)}, []string{"pod-3", "pod-2"}},
		{"unscheduled before scheduled", 1, []podstate.Summary{p(0, unscheduled), p(1), p(2)}, []string{"pod-0"}},
		{"not ready before ready", 1, []podstate.Summary{p(0), p(1, notReady), p(2)}, []string{"pod-1"}},
		{"unscheduled before not ready", 2, []podstate.Summary{p(0, notReady), p(1), p(2, unscheduled), p(3)}, []string{"pod-2", "pod-0"}},
		{"surplus larger than candidates", 5, []podstate.Summary{p(0), p(1)}, []string{"pod-1", "pod-0"}},
		{"old template before new, as Grove", 2, []podstate.Summary{hashed(p(0), "old"), hashed(p(1), "old"), hashed(p(2), "new")}, []string{"pod-1", "pod-0"}},
		{"no template label counts as old", 1, []podstate.Summary{p(0), hashed(p(1), "new")}, []string{"pod-0"}},
		{"not ready new before ready old", 1, []podstate.Summary{hashed(p(0), "old"), hashed(p(1, notReady), "new")}, []string{"pod-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := podsToDelete(c.surplus, c.candidates, "new")
			if diff := cmp.Diff(c.want, podNames(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsToDeleteLeavesCandidatesAlone(t *testing.T) {
	candidates := []podstate.Summary{p(0), p(1), p(2)}
	podsToDelete(1, candidates, "")
	if diff := cmp.Diff([]string{"pod-0", "pod-1", "pod-2"}, podNames(candidates)); diff != "" {
		t.Errorf("candidates reordered (-want +got):\n%s", diff)
	}
}

func TestOnePodPerIndex(t *testing.T) {
	cases := []struct {
		name      string
		pods      []podstate.Summary
		wantKept  []string
		wantExtra []string
	}{
		{"unique indices", []podstate.Summary{p(1), p(0)}, []string{"pod-0", "pod-1"}, []string{}},
		{"the ready pod of an index stays", []podstate.Summary{p(0, named("a"), notReady), p(0, named("b"))}, []string{"b"}, []string{"a"}},
		{"the scheduled pod of an index stays", []podstate.Summary{p(0, named("a")), p(0, named("b"), unscheduled)}, []string{"a"}, []string{"b"}},
		{"equal pods: a stable choice", []podstate.Summary{p(0, named("b")), p(0, named("a")), p(0, named("c"))}, []string{"c"}, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, extra := onePodPerIndex(c.pods)
			if diff := cmp.Diff(c.wantKept, podNames(kept)); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantExtra, podNames(extra)); diff != "" {
				t.Errorf("extra (-want +got):\n%s", diff)
			}
		})
	}
}

// hashed is pod with the template hash label's value.
func hashed(pod podstate.Summary, hash string) podstate.Summary {
	pod.TemplateHash = hash
	return pod
}
