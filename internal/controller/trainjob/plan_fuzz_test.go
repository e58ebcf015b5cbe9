package trainjob

import (
	"errors"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// FuzzPlanPass checks the pass's plan as a whole, on the facts FuzzDecide
// draws, with or without a build, with or without a runtime that cannot be resolved: a pass without
// a runtime writes no status and fails; otherwise it writes decide's
// status, an event for each condition that became true and none other,
// deletes the backend's object only past the deadline and the TrainJob only
// once finished with a TTL, writes no build of a finished TrainJob, and
// settles only what it wrote of a build.
func FuzzPlanPass(f *testing.F) {
	for _, tc := range decideCases() {
		f.Add(tc.flags, tc.more, tc.deadline, tc.ttl, tc.now, tc.transition, false, tc.more&fuzzHasPodCliqueSet != 0)
	}
	f.Add(uint8(fuzzSuspended), uint8(fuzzHasPodCliqueSet), int64(0), int32(0), int64(31), int64(30), true, false)
	f.Fuzz(func(t *testing.T, flags, more uint8, deadline int64, ttl int32, now, transition int64, unresolved, built bool) {
		in := fuzzFacts(flags, more, deadline, ttl, now, transition)
		if unresolved {
			in.ResolveErr = errors.New("runtime gone")
		}
		if built && !finished(in.TrainJob.Status) {
			desired := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: in.TrainJob.Namespace, Name: in.TrainJob.Name}}
			in.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			in.Built = builtObjects{podCliqueSet: &trainjob.PodCliqueSetObjects{PodCliqueSet: desired}}
		}
		plan := planPass(in)
		if unresolved {
			if plan.Status != nil || plan.err == nil || len(plan.Deletes) != 0 || plan.Settle != nil {
				t.Fatalf("a pass without its runtime writes a status, deletes or settles, or does not fail: %+v", plan)
			}
			for _, w := range plan.OwnWrites {
				if _, ok := w.(suspendWrites); !ok {
					t.Fatalf("a pass without its runtime writes %T, not only a suspension", w)
				}
			}
			return
		}
		d := decide(in)
		written, ok := plan.Status.(*trainerv1alpha1.TrainJob)
		if !ok || !equalStatus(written.Status, d.Status) || plan.RequeueAfter != d.RequeueAfter {
			t.Fatalf("the plan's status or requeue is not decide's: %+v %v\n%+v %v", written.Status, plan.RequeueAfter, d.Status, d.RequeueAfter)
		}
		became := map[string]bool{}
		for _, c := range d.Status.Conditions {
			if c.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(in.TrainJob.Status.Conditions, c.Type) {
				became[c.Reason] = true
			}
		}
		for _, e := range plan.Events {
			if !became[e.Reason] && (e.Action != "Delete" || !d.DeleteRun) {
				t.Fatalf("event %s %q without a condition that became true", e.Reason, e.Message)
			}
		}
		for _, del := range plan.Deletes {
			switch del.Step {
			case stepDeadline:
				if !isDeadlineExceeded(d.Status) {
					t.Fatalf("deletes the %s before its deadline passed", del.Kind)
				}
			case stepTTL:
				if !d.DeleteTrainJob {
					t.Fatal("deletes the TrainJob, which decide keeps")
				}
			default:
				t.Fatalf("deletion of step %q", del.Step)
			}
		}
		for _, w := range plan.OwnWrites {
			if _, ok := w.(buildWrites); ok && finished(d.Status) {
				t.Fatal("writes the build of a finished TrainJob")
			}
		}
		if (plan.Settle != nil) != (d.Run && in.Built.any()) {
			t.Fatal("settles writes of a build it did not write, or not those it wrote")
		}
	})
}

func equalStatus(a, b trainerv1alpha1.TrainJobStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
