package children

import "testing"

func TestBudget(t *testing.T) {
	b := NewBudget(5)
	if !b.Take(2) || b.Exhausted() {
		t.Fatal("2 of 5 must fit")
	}
	if got := Cut(b, make([]int, 4)); len(got) != 3 || !b.Exhausted() {
		t.Errorf("cut to %d, exhausted %v; want the 3 that fit, and the rest left", len(got), b.Exhausted())
	}
	if b.Take(1) {
		t.Error("nothing is left")
	}
	if got := Cut(NewBudget(10), make([]string, 4)); len(got) != 4 {
		t.Errorf("cut %d of 4 within budget", len(got))
	}
	b = NewBudget(3)
	b.spend(2, false)
	if b.Remaining() != 1 || b.Exhausted() {
		t.Errorf("after spending 2 of 3: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
	b.spend(1, true)
	if b.Remaining() != 0 || !b.Exhausted() {
		t.Errorf("a plan cut short leaves the budget exhausted: remaining %d, exhausted %v", b.Remaining(), b.Exhausted())
	}
}
