package trainjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
)

// suspendOnly carries a suspended TrainJob's suspension to its backend
// object when the build cannot be made (cause says why; nil when nothing
// was built for a stated reason): spec.suspend alone is set on the existing
// JobSet or PodCliqueSet, so that its pods go and a queue gets its quota
// back even while the rest of the TrainJob cannot be rebuilt. It is nil
// when there is nothing to suspend.
func suspendOnly(f facts, cause error) children.OwnWrite {
	tj := f.TrainJob
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return nil
	}
	out := suspendWrites{why: "the build could not be made"}
	if cause != nil {
		out.why += ": " + cause.Error()
	}
	for _, obj := range []client.Object{f.JobSet, f.PodCliqueSet} {
		if updated, changed := suspendedCopy(obj); changed {
			out.objects = append(out.objects, updated)
		}
	}
	if len(out.objects) == 0 {
		return nil
	}
	return out
}

// suspendWrites are the backend objects suspendOnly suspends, each a copy
// with only spec.suspend changed, updated with the resourceVersion it was
// read at.
type suspendWrites struct {
	objects []client.Object
	why     string
}

func (s suspendWrites) Write(ctx context.Context, w children.Writer, owner client.Object) error {
	var errs []error
	for _, obj := range s.objects {
		if err := w.Client.Update(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("suspend %s %s without its build: %w", kindOf(obj), obj.GetName(), err))
			continue
		}
		w.Recorder.Eventf(owner, obj, corev1.EventTypeWarning, reasonSuspendedOnly, "Suspend",
			"%s %s suspended (only spec.suspend set): %s", kindOf(obj), obj.GetName(), s.why)
	}
	return errors.Join(errs...)
}

// suspendedCopy is a copy of a JobSet or PodCliqueSet with spec.suspend
// true; changed is false when it was suspended already, or obj is nil.
func suspendedCopy(obj client.Object) (client.Object, bool) {
	switch o := obj.(type) {
	case *jobsetv1alpha2.JobSet:
		if o == nil || ptr.Deref(o.Spec.Suspend, false) {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	case *copsev1alpha1.PodCliqueSet:
		if o == nil || o.IsSuspended() {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	}
	return nil, false
}

// observeSuspendTargets reads what a pass that cannot resolve its runtime (and so
// does not know its backend) reads to suspend: both kinds, when the
// TrainJob is suspended and has not finished.
func (r *Reconciler) observeSuspendTargets(ctx context.Context, f *facts) error {
	tj := f.TrainJob
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return nil
	}
	jobSet, jobSetErr := r.getJobSet(ctx, tj)
	pcs, pcsErr := r.getPodCliqueSet(ctx, tj)
	f.JobSet, f.PodCliqueSet = jobSet, pcs
	return errors.Join(jobSetErr, pcsErr)
}
