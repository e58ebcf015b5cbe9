package trainjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// FieldOwner is the field manager of every object the TrainJob controller
// writes for a TrainJob's build: it owns, in managedFields, the fields of the
// build it applies server-side.
const FieldOwner = "copse-trainjob"

// act writes what decideWrites decided, in order, and stops at the first
// write that fails: the objects the backend's pods use exist before the
// backend's object. A write the API server refused is a *refusedWrite,
// which settle records on the TrainJob.
func (r *Reconciler) act(ctx context.Context, tj *trainerv1alpha1.TrainJob, plan writePlan) error {
	var workloadUID types.UID
	for _, w := range plan.writes {
		if podGroup, ok := w.object.(*schedulingv1beta1.PodGroup); ok && workloadUID != "" {
			// Its Workload was created by this pass.
			podGroup = podGroup.DeepCopy()
			trainjob.SetPodGroupWorkloadUID(podGroup, workloadUID)
			w.object = podGroup
		}
		if err := r.write(ctx, tj, w); err != nil {
			return err
		}
		if workload, ok := w.object.(*schedulingv1beta1.Workload); ok {
			workloadUID = workload.UID
		}
	}
	if plan.waiting != "" {
		log.FromContext(ctx).V(1).Info(plan.waiting)
	}
	return nil
}

// write writes one object as w says.
func (r *Reconciler) write(ctx context.Context, tj *trainerv1alpha1.TrainJob, w write) error {
	switch w.how {
	case writeApply:
		return r.applyBuild(ctx, tj, w.object, w.exists)
	case writeCreate:
		err := r.Client.Create(ctx, w.object, client.FieldOwner(FieldOwner))
		if _, isWorkload := w.object.(*schedulingv1beta1.Workload); apierrors.IsAlreadyExists(err) && !isWorkload {
			// Made meanwhile; an immutable object is kept as it is. (A
			// Workload's PodGroups need its UID: the next pass reads it.)
			return nil
		}
		return refused(opCreate, kindOf(w.object), w.object.GetName(), err)
	case writeSSHSecret:
		return r.createMPISecret(ctx, tj)
	case writeRebuild:
		return refused(opUpdate, kindOf(w.object), w.object.GetName(), r.Client.Update(ctx, w.object, client.FieldOwner(FieldOwner)))
	case writeSuspend:
		// The old build stays: the next pass still sees the rest of it to
		// apply, once the object's pods are gone.
		return refused(opUpdate, kindOf(w.object), w.object.GetName(), r.Client.Update(ctx, w.object, client.FieldOwner(FieldOwner)))
	case writeAdopted:
		return r.updateAdoptedJobSet(ctx, tj, w.object)
	case writeBlocked:
		return w.err
	}
	return fmt.Errorf("unknown write %d of %s", w.how, kindOf(w.object))
}

// applyBuild applies a built object server-side, as FieldOwner, forced: the
// fields of the build are copse's, and a field the build no longer sets is
// removed where copse set it. The creation of the backend's object is
// recorded as an event. Admission may refuse the result (e.g. a runtime
// patch that changes more than a suspended Training PodCliqueSet allows):
// settle records it on the TrainJob.
func (r *Reconciler) applyBuild(ctx context.Context, tj *trainerv1alpha1.TrainJob, obj client.Object, exists bool) error {
	config, err := applyConfiguration(obj)
	if err != nil {
		return err
	}
	op := opCreate
	if exists {
		op = opUpdate
	}
	kind := kindOf(obj)
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(config), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return refused(op, kind, obj.GetName(), err)
	}
	if reason := createdReason(obj); reason != "" && !exists {
		r.Recorder.Eventf(tj, config, corev1.EventTypeNormal, reason, "Create", "created %s %s", kind, obj.GetName())
	}
	return nil
}

// applyConfiguration is a built object as an apply configuration: every
// field the build sets, and nothing the API server owns (status,
// creationTimestamp). Builds carry their apiVersion and kind.
func applyConfiguration(obj client.Object) (*unstructured.Unstructured, error) {
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = u.DeepCopy().Object
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("the apply configuration of %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
	}
	config := &unstructured.Unstructured{Object: content}
	if config.GetAPIVersion() == "" || config.GetKind() == "" {
		return nil, fmt.Errorf("the apply configuration of %s %s: the build sets no apiVersion and kind", kindOf(obj), obj.GetName())
	}
	delete(config.Object, "status")
	unstructured.RemoveNestedField(config.Object, "metadata", "creationTimestamp")
	dropNulls(config.Object)
	return config, nil
}

// dropNulls removes every null of an apply configuration, at any depth: a
// field the build leaves unset is one copse does not own (removed where it
// set it before), while a null is a value the API server's schema refuses
// where it wants an object or a list. A typed build converted to
// unstructured carries one for every nil slice (a container's unset
// command, say).
func dropNulls(content map[string]any) {
	for key, value := range content {
		switch v := value.(type) {
		case nil:
			delete(content, key)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, item := range v {
				if m, ok := item.(map[string]any); ok {
					dropNulls(m)
				}
			}
		}
	}
}

// createMPISecret creates the TrainJob's SSH identity once; it is immutable
// and kept for the TrainJob's life. copse never reads Secrets (its RBAC only
// creates them): an existing one answers AlreadyExists, which is why it is
// created rather than applied. The key is made only while the backend's
// object does not run yet, the one time it is needed.
func (r *Reconciler) createMPISecret(ctx context.Context, tj *trainerv1alpha1.TrainJob) error {
	secret, err := trainjob.BuildMPISSHSecret(tj)
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, secret, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return refused(opCreate, "Secret", secret.Name, err)
	}
	return nil
}

// createdReason is the event reason of a backend object's creation, "" for
// the other objects of a build.
func createdReason(obj client.Object) string {
	switch obj.(type) {
	case *jobsetv1alpha2.JobSet:
		return reasonJobSetCreated
	case *copsev1alpha1.PodCliqueSet:
		return reasonPodCliqueSetCreated
	}
	return ""
}

// kindOf names the kind of an object of a build.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *copsev1alpha1.PodCliqueSet:
		return "PodCliqueSet"
	case *jobsetv1alpha2.JobSet:
		return "JobSet"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *schedulingv1beta1.Workload:
		return "Workload"
	case *schedulingv1beta1.PodGroup:
		return "PodGroup"
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// suspendWithoutBuild carries a suspended TrainJob's suspension to its
// backend object when the build cannot be made (cause says why; nil when
// nothing was built for a stated reason): it sets only spec.suspend on the
// existing JobSet or PodCliqueSet, so that its pods go and a queue gets its
// quota back even while the rest of the TrainJob cannot be rebuilt. f holds
// the observed objects, nil when the backend is not known yet (both kinds
// are read). cause is returned, joined with any error of the update.
func (r *Reconciler) suspendWithoutBuild(ctx context.Context, tj *trainerv1alpha1.TrainJob, f *facts, cause error) error {
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return cause
	}
	var objects []client.Object
	if f != nil {
		if f.JobSet != nil {
			objects = append(objects, f.JobSet)
		}
		if f.PodCliqueSet != nil {
			objects = append(objects, f.PodCliqueSet)
		}
	} else {
		jobSet, jobSetErr := r.getJobSet(ctx, tj)
		pcs, pcsErr := r.getPodCliqueSet(ctx, tj)
		if jobSet != nil {
			objects = append(objects, jobSet)
		}
		if pcs != nil {
			objects = append(objects, pcs)
		}
		if jobSetErr != nil || pcsErr != nil {
			cause = errors.Join(cause, jobSetErr, pcsErr)
		}
	}
	for _, obj := range objects {
		updated, changed := suspendedCopy(obj)
		if !changed {
			continue
		}
		if err := r.Client.Update(ctx, updated); err != nil {
			return errors.Join(cause, fmt.Errorf("suspend %s %s without its build: %w", kindOf(obj), obj.GetName(), err))
		}
		why := "the build could not be made"
		if cause != nil {
			why += ": " + cause.Error()
		}
		r.Recorder.Eventf(tj, updated, corev1.EventTypeWarning, reasonSuspendedOnly, "Suspend",
			"%s %s suspended (only spec.suspend set): %s", kindOf(obj), obj.GetName(), why)
	}
	return cause
}

// suspendedCopy is a copy of a JobSet or PodCliqueSet with spec.suspend
// true; changed is false when it was suspended already.
func suspendedCopy(obj client.Object) (client.Object, bool) {
	switch o := obj.(type) {
	case *jobsetv1alpha2.JobSet:
		if ptr.Deref(o.Spec.Suspend, false) {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	case *copsev1alpha1.PodCliqueSet:
		if o.IsSuspended() {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	}
	return nil, false
}
