package children

import (
	"errors"
	"testing"

	"github.com/copse-dev/copse/internal/requeue"
)

func TestEndedAtStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		out       Outcome
		ended     bool
		requeue   bool
		wantError bool
	}{
		{name: "conflict: decided again soon", out: Outcome{Conflict: true}, ended: true, requeue: true},
		{name: "owner gone: nothing more", out: Outcome{Gone: true}, ended: true},
		{name: "status write failed: back-off", out: Outcome{Errors: map[string][]error{StatusStep: {errors.New("boom")}}}, ended: true, wantError: true},
		{name: "a later write failed: the caller's", out: Outcome{Errors: map[string][]error{ObjectsStep: {errors.New("boom")}}}},
		{name: "written", out: Outcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			result, ended, err := tc.out.EndedAtStatus()
			if ended != tc.ended || (err != nil) != tc.wantError {
				t.Fatalf("ended %v, err %v; want ended %v, error %v", ended, err, tc.ended, tc.wantError)
			}
			if got := result.RequeueAfter == requeue.AfterConflict; got != tc.requeue {
				t.Errorf("requeue after %v, want the conflict's: %v", result.RequeueAfter, tc.requeue)
			}
		})
	}
}
