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

// The cut hook runs once per pass, however many writes are left out, and
// never for a pass that fits.
func TestBudgetCallsOnCutOnce(t *testing.T) {
	cuts := 0
	count := func() { cuts++ }
	b := NewBudget(2).OnCut(count)
	Cut(b, make([]int, 2))
	if cuts != 0 {
		t.Fatalf("a pass that fits was counted as cut %d times", cuts)
	}
	b.Take(1)
	Cut(b, make([]int, 3))
	b.spend(0, true)
	if cuts != 1 {
		t.Errorf("a pass cut three times was counted %d times; want once", cuts)
	}
	if NewBudget(0).Take(1) {
		t.Error("a budget of 0 takes nothing")
	}
}
