package trainjob

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
)

// Steps of the pass's deletions, for errors.
const (
	stepDeadline = "deadline"
	stepTTL      = "ttl"
)

// passPlan is everything one pass writes (children.PassPlan, carried out
// by the pass's one writer) and what its settle step needs besides.
type passPlan struct {
	children.PassPlan
	// err is the pass's own failure (the runtime cannot be resolved, the
	// build cannot be made), returned once the writes are made.
	err error
	// suspended is the TrainJob's spec.suspend, by which a refused update
	// is sorted (classifyRefusal).
	suspended bool
	// waiting says why the backend's object is not rebuilt yet; ttl is the
	// TTL the TrainJob is deleted after, nil when it is not. Both are for
	// the log.
	waiting string
	ttl     *int32
}

// planPass decides, from the facts alone, everything the pass writes, in
// the writer's order:
//
//	status   decide's conditions, jobsStatus, deadline and TTL; none when
//	         the runtime cannot be resolved or the build made (the pass
//	         fails and is retried)
//	events   one per condition that became true; a deadline's deletion
//	objects  the backend's object once the deadline passed; the finished
//	         TrainJob once its TTL passed
//	own      the runtime's resolution (runtimeWrites), then the build
//	         (decideWrites), or only a suspension of the backend's object
//	         when nothing could be built
//	settle   how the build's writes went, on the status (settleWrites)
func planPass(f facts) passPlan {
	tj := f.TrainJob
	plan := passPlan{PassPlan: children.PassPlan{Observed: tj}, suspended: ptr.Deref(tj.Spec.Suspend, false)}
	if cause := cannotBuild(f); cause != nil {
		plan.Events = cannotBuildEvents(f)
		plan.OwnWrites = ownWrites(suspendOnly(f, cause))
		plan.err = cause
		return plan
	}
	d := decide(f)
	desired := tj.DeepCopy()
	desired.Status = d.Status
	plan.Status = desired
	plan.Events = transitionEvents(tj.Status, d.Status)
	plan.RequeueAfter = d.RequeueAfter
	if f.RuntimeWrites != (runtimeWrites{}) {
		plan.OwnWrites = append(plan.OwnWrites, f.RuntimeWrites)
	}
	switch {
	case d.Run && f.Built.any():
		writes := decideWrites(writeInputs{TrainJob: tj, Built: f.Built, JobSet: f.JobSet, PodCliqueSet: f.PodCliqueSet, Existing: f.Existing})
		plan.OwnWrites = append(plan.OwnWrites, buildWrites(writes.writes))
		plan.waiting = writes.waiting
		plan.Settle = settleWrites(f.Now)
	case d.Run:
		// Nothing could be built (a topology level no binding has): a
		// suspension still reaches an existing object.
		plan.OwnWrites = append(plan.OwnWrites, ownWrites(suspendOnly(f, nil))...)
	case d.DeleteRun:
		deletion, events := deleteRun(f)
		plan.Deletes = append(plan.Deletes, deletion)
		plan.Events = append(plan.Events, events...)
	}
	if d.DeleteTrainJob {
		plan.ttl = f.TTL
		plan.Deletes = append(plan.Deletes, children.Deletion{Step: stepTTL, Kind: "TrainJob",
			Objects: []client.Object{tj}, Propagation: metav1.DeletePropagationForeground})
	}
	return plan
}

// ownWrites is the writes of those set, in order.
func ownWrites(writes ...children.OwnWrite) []children.OwnWrite {
	var out []children.OwnWrite
	for _, w := range writes {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}

// cannotBuild is why the pass has nothing to build from, nil when it has.
func cannotBuild(f facts) error {
	if f.ResolveErr != nil {
		return f.ResolveErr
	}
	return f.BuildErr
}

// cannotBuildEvents say why nothing could be built: a runtime that is not
// there (not once the TrainJob finished: it needs none), or a build that
// failed.
func cannotBuildEvents(f facts) []children.Event {
	switch {
	case f.ResolveErr != nil && !finished(f.TrainJob.Status):
		return []children.Event{{Type: corev1.EventTypeWarning, Reason: reasonRuntimeUnavailable, Action: "Resolve", Message: f.ResolveErr.Error()}}
	case f.BuildErr != nil:
		return []children.Event{{Type: corev1.EventTypeWarning, Reason: reasonBuildFailed, Action: "Build", Message: f.BuildErr.Error()}}
	}
	return nil
}

// deleteRun deletes the backend's object once the deadline passed (the
// Failed condition is written first), said in an event when it is not
// being deleted already.
func deleteRun(f facts) (children.Deletion, []children.Event) {
	var obj client.Object = f.JobSet
	kind := "JobSet"
	if f.PodCliqueSet != nil {
		obj, kind = f.PodCliqueSet, "PodCliqueSet"
	}
	deletion := children.Deletion{Step: stepDeadline, Kind: kind, Objects: []client.Object{obj}}
	if obj.GetDeletionTimestamp() != nil {
		return deletion, nil
	}
	return deletion, []children.Event{{Type: corev1.EventTypeWarning, Reason: trainerv1alpha1.TrainJobDeadlineExceededReason, Action: "Delete",
		Message: fmt.Sprintf("activeDeadlineSeconds %d passed: deleting %s %s", f.TrainJob.Spec.ActiveDeadlineSeconds, kind, obj.GetName())}}
}
