package children

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// describe is a plan as "op name[=value]" strings, with cut-short last.
func describe(p Plan) []string {
	var out []string
	for _, w := range p.Writes {
		s := string(w.Op) + " " + w.Object.GetName()
		if w.Op == Update {
			s += "=" + w.Object.(*corev1.ConfigMap).Data["v"]
		}
		out = append(out, s)
	}
	if p.CutShort {
		out = append(out, "cut short")
	}
	return out
}

func TestPlanWrites(t *testing.T) {
	cases := []struct {
		name   string
		sets   []Set
		budget int
		want   []string
	}{
		{
			name:   "nothing exists: every desired object is created",
			sets:   []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "1"), desired("b", "1"))}},
			budget: 10,
			want:   []string{"create a", "create b"},
		},
		{
			name: "an existing object is refreshed only when Refresh changes it",
			sets: []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "2"), desired("b", "1")),
				Observed: objs(cm("a", owner, "1", false), cm("b", owner, "1", false)), Refresh: refreshValue}},
			budget: 10,
			want:   []string{"update a=2"},
		},
		{
			name: "without Refresh an existing object is never updated",
			sets: []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "2")),
				Observed: objs(cm("a", owner, "1", false))}},
			budget: 10,
			want:   nil,
		},
		{
			name: "another owner's object, or one being deleted, is neither refreshed nor recreated",
			sets: []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "2"), desired("b", "2")),
				Observed: objs(cm("a", other, "1", false), cm("b", owner, "1", true)), Refresh: refreshValue}},
			budget: 10,
			want:   nil,
		},
		{
			name: "an object no longer wanted is deleted when the owner controls it and it is not going already",
			sets: []Set{{Kind: "ConfigMap", Observed: objs(cm("a", owner, "1", false), cm("b", other, "1", false),
				cm("c", owner, "1", true), cm("d", "", "1", false))}},
			budget: 10,
			want:   []string{"delete a"},
		},
		{
			name: "the budget keeps the first writes in set order and says the rest waits",
			sets: []Set{
				{Kind: "ConfigMap", Desired: objs(desired("a", "1"), desired("b", "1"))},
				{Kind: "ConfigMap", Observed: objs(cm("c", owner, "1", false))},
			},
			budget: 2,
			want:   []string{"create a", "create b", "cut short"},
		},
		{
			name: "a refresh that changes nothing costs no budget",
			sets: []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "1"), desired("b", "1")),
				Observed: objs(cm("a", owner, "1", false)), Refresh: refreshValue}},
			budget: 1,
			want:   []string{"create b"},
		},
		{
			name:   "no budget: nothing, and cut short when something was due",
			sets:   []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "1"))}},
			budget: 0,
			want:   []string{"cut short"},
		},
		{
			name:   "a desired name twice is made once",
			sets:   []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "1"), desired("a", "2"))}},
			budget: 10,
			want:   []string{"create a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(PlanWrites(owner, tc.sets, tc.budget)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPlanWritesLeavesItsInputsAlone(t *testing.T) {
	existing := cm("a", owner, "1", false)
	PlanWrites(owner, []Set{{Kind: "ConfigMap", Desired: objs(desired("a", "2")), Observed: objs(existing), Refresh: refreshValue}}, 10)
	if existing.Data["v"] != "1" {
		t.Error("Refresh changed the observed object, not a copy")
	}
}
