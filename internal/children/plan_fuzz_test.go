package children

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/fuzzinput"
)

// setsOf builds up to 4 sets of ConfigMaps from fuzz bytes: names from a
// small alphabet (so that desired and observed collide), observed objects
// (one of a name per set)
// of this owner, another or none, some being deleted, values that a
// refresh may or may not change, and sets with or without Refresh.
func setsOf(data []byte) []Set {
	src := fuzzinput.New(data)
	name := func() string { return string(rune('a' + src.Intn(6))) }
	value := func() string { return fmt.Sprint(src.Intn(3)) }
	sets := make([]Set, src.Intn(5))
	for i := range sets {
		s := &sets[i]
		s.Kind = "ConfigMap"
		if src.Bool() {
			s.Refresh = refreshValue
		}
		for range src.Intn(5) {
			s.Desired = append(s.Desired, desired(name(), value()))
		}
		// One object of a name at most, as in a namespace; a UID of its own.
		seen := map[string]bool{}
		for range src.Intn(5) {
			controller := fuzzinput.Pick(src, owner, other, types.UID(""))
			obj := cm(name(), controller, value(), src.Maybe(4))
			obj.UID = types.UID(fmt.Sprintf("uid-%d-%s", i, obj.Name))
			if !seen[obj.Name] {
				seen[obj.Name] = true
				s.Observed = append(s.Observed, obj)
			}
		}
	}
	return sets
}

// FuzzPlanWrites checks the plan's invariants on random sets and budgets:
// it stays within the budget and says when it was cut; with a smaller budget
// it is a prefix of the plan with room for everything; it never writes a
// name twice in a set; it creates only desired names that do not exist;
// it updates only objects the owner controls that are not being deleted,
// to what Refresh made of them, and only when that changed something; it
// deletes only objects the owner controls, not being deleted, that are no
// longer desired; and with room for everything it leaves nothing undone.
func FuzzPlanWrites(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte{1, 1, 2, 0, 1, 0, 1, 2, 2, 0, 0, 0, 1}, 1)
	f.Add([]byte{3, 1, 4, 0, 0, 1, 1, 2, 2, 3, 0, 4, 1, 5, 2, 1, 2, 0, 1, 0, 2, 0, 1}, 3)
	f.Add([]byte{4, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 1, 1, 3, 3, 3, 0, 0}, 100)
	f.Fuzz(func(t *testing.T, data []byte, budget int) {
		sets := setsOf(data)
		budget = max(budget%64, 0)
		full := PlanWrites(owner, sets, 1<<20)
		plan := PlanWrites(owner, sets, budget)

		if len(plan.Writes) > budget {
			t.Fatalf("%d writes exceed the budget of %d", len(plan.Writes), budget)
		}
		if plan.CutShort != (len(full.Writes) > budget) {
			t.Fatalf("cut short %v with %d of %d writes planned in a budget of %d", plan.CutShort, len(plan.Writes), len(full.Writes), budget)
		}
		if full.CutShort {
			t.Fatal("a plan with room for everything is cut short")
		}
		if !slices.EqualFunc(plan.Writes, full.Writes[:len(plan.Writes)], sameWrite) {
			t.Fatalf("the plan in a budget of %d is not the first writes of the whole plan", budget)
		}

		for i, s := range sets {
			checkSet(t, i, s, writesOf(full, s))
		}
	})
}

// writesOf are the writes of plan that came from set s (objects of s's
// desired or observed lists, or copies of observed ones).
func writesOf(plan Plan, s Set) []Write {
	var out []Write
	for _, w := range plan.Writes {
		if slices.Contains(s.Desired, w.Object) || slices.Contains(s.Observed, w.Object) ||
			(w.Op == Update && slices.ContainsFunc(s.Observed, func(o client.Object) bool { return o.GetUID() == w.Object.GetUID() })) {
			out = append(out, w)
		}
	}
	return out
}

func checkSet(t *testing.T, i int, s Set, writes []Write) {
	t.Helper()
	desiredNames, observedByName := map[string]client.Object{}, map[string]client.Object{}
	for _, d := range s.Desired {
		if _, seen := desiredNames[d.GetName()]; !seen {
			desiredNames[d.GetName()] = d
		}
	}
	for _, o := range s.Observed {
		if _, seen := observedByName[o.GetName()]; !seen {
			observedByName[o.GetName()] = o
		}
	}
	written := map[string]bool{}
	for _, w := range writes {
		n := w.Object.GetName()
		if written[n] {
			t.Fatalf("set %d: %s written twice", i, n)
		}
		written[n] = true
		current, exists := observedByName[n]
		switch w.Op {
		case Create:
			if desiredNames[n] != w.Object || exists {
				t.Fatalf("set %d: created %s, desired %v, exists %v", i, n, desiredNames[n] != nil, exists)
			}
		case Update:
			if s.Refresh == nil || desiredNames[n] == nil || !exists || !ours(current, owner) ||
				w.Object.(*corev1.ConfigMap).Data["v"] != desiredNames[n].(*corev1.ConfigMap).Data["v"] ||
				current.(*corev1.ConfigMap).Data["v"] == desiredNames[n].(*corev1.ConfigMap).Data["v"] {
				t.Fatalf("set %d: updated %+v from %+v", i, w.Object, current)
			}
		case Delete:
			if desiredNames[n] != nil || !ours(w.Object, owner) {
				t.Fatalf("set %d: deleted %+v, desired %v", i, w.Object, desiredNames[n] != nil)
			}
		}
	}
	// Nothing left undone: every desired name exists or is created, every
	// object of ours no longer desired is deleted.
	for n := range desiredNames {
		if _, exists := observedByName[n]; !exists && !written[n] {
			t.Fatalf("set %d: desired %s is neither there nor created", i, n)
		}
	}
	for _, o := range s.Observed {
		if desiredNames[o.GetName()] == nil && ours(o, owner) && !written[o.GetName()] {
			t.Fatalf("set %d: %s is ours, unwanted and not deleted", i, o.GetName())
		}
	}
}

func sameWrite(a, b Write) bool {
	return a.Op == b.Op && a.Kind == b.Kind && a.Object.GetName() == b.Object.GetName()
}
