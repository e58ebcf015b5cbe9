package podcliqueset

import (
	"testing"

	"github.com/copse-dev/copse/internal/podstate"
)

func TestWriteBudget(t *testing.T) {
	b := newBudget(5)
	if !b.take(2) || b.exhausted() {
		t.Fatal("2 of 5 must fit")
	}
	if got := b.cut(make([]podstate.Summary, 4)); len(got) != 3 || !b.exhausted() {
		t.Errorf("cut to %d, exhausted %v; want the 3 that fit, and the rest left", len(got), b.exhausted())
	}
	if b.take(1) {
		t.Error("nothing is left")
	}
	if got := newBudget(10).cut(make([]podstate.Summary, 4)); len(got) != 4 {
		t.Errorf("cut %d of 4 within budget", len(got))
	}
}
