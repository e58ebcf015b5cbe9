package requeue

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

func TestEarliest(t *testing.T) {
	none, soon, later := ctrl.Result{}, ctrl.Result{RequeueAfter: time.Second}, ctrl.Result{RequeueAfter: time.Minute}
	cases := []struct{ a, b, want ctrl.Result }{
		{none, none, none}, {none, later, later}, {later, none, later}, {soon, later, soon}, {later, soon, soon},
	}
	for _, c := range cases {
		if got := Earliest(c.a, c.b); got != c.want {
			t.Errorf("Earliest(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
