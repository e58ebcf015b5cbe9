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
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/trainjob"
)

// FieldOwner is the field manager of every object the TrainJob controller
// writes for a TrainJob's build: it owns, in managedFields, the fields of the
// build it applies server-side.
const FieldOwner = "copse-trainjob"

// buildWrites are a pass's writes of the build (decideWrites), made by the
// pass's writer in order, stopping at the first that fails: the objects the
// backend's pods use exist before the backend's object. A write the API
// server refused is a *refusedWrite, which settle records on the TrainJob.
type buildWrites []write

func (b buildWrites) Write(ctx context.Context, w children.Writer, owner client.Object) error {
	tj := owner.(*trainerv1alpha1.TrainJob)
	var workloadUID types.UID
	for _, one := range b {
		if podGroup, ok := one.object.(*schedulingv1beta1.PodGroup); ok && workloadUID != "" {
			// Its Workload was created by this pass.
			podGroup = podGroup.DeepCopy()
			trainjob.SetPodGroupWorkloadUID(podGroup, workloadUID)
			one.object = podGroup
		}
		if err := writeOne(ctx, w, tj, one); err != nil {
			return err
		}
		if workload, ok := one.object.(*schedulingv1beta1.Workload); ok {
			workloadUID = workload.UID
		}
	}
	return nil
}

// writeOne writes one object as one.how says.
func writeOne(ctx context.Context, w children.Writer, tj *trainerv1alpha1.TrainJob, one write) error {
	switch one.how {
	case writeApply:
		return applyBuild(ctx, w, tj, one.object, one.exists)
	case writeCreate:
		err := w.Client.Create(ctx, one.object, client.FieldOwner(FieldOwner))
		if _, isWorkload := one.object.(*schedulingv1beta1.Workload); apierrors.IsAlreadyExists(err) && !isWorkload {
			// Made meanwhile; an immutable object is kept as it is. (A
			// Workload's PodGroups need its UID: the next pass reads it.)
			return nil
		}
		return refused(opCreate, kindOf(one.object), one.object.GetName(), err)
	case writeSSHSecret:
		return createMPISecret(ctx, w, tj)
	case writeRebuild:
		return refused(opUpdate, kindOf(one.object), one.object.GetName(), w.Client.Update(ctx, one.object, client.FieldOwner(FieldOwner)))
	case writeSuspend:
		// The old build stays: the next pass still sees the rest of it to
		// apply, once the object's pods are gone.
		return refused(opUpdate, kindOf(one.object), one.object.GetName(), w.Client.Update(ctx, one.object, client.FieldOwner(FieldOwner)))
	case writeAdopted:
		return updateAdoptedJobSet(ctx, w, tj, one.object)
	case writeBlocked:
		return one.err
	}
	return fmt.Errorf("unknown write %d of %s", one.how, kindOf(one.object))
}

// applyBuild applies a built object server-side, as FieldOwner, forced: the
// fields of the build are copse's, and a field the build no longer sets is
// removed where copse set it. The creation of the backend's object is
// recorded as an event. Admission may refuse the result (e.g. a runtime
// patch that changes more than a suspended Training PodCliqueSet allows):
// settle records it on the TrainJob.
func applyBuild(ctx context.Context, w children.Writer, tj *trainerv1alpha1.TrainJob, obj client.Object, exists bool) error {
	config, err := applyConfiguration(obj)
	if err != nil {
		return err
	}
	op := opCreate
	if exists {
		op = opUpdate
	}
	kind := kindOf(obj)
	if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(config), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return refused(op, kind, obj.GetName(), err)
	}
	if reason := createdReason(obj); reason != "" && !exists {
		w.Recorder.Eventf(tj, config, corev1.EventTypeNormal, reason, "Create", "created %s %s", kind, obj.GetName())
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
func createMPISecret(ctx context.Context, w children.Writer, tj *trainerv1alpha1.TrainJob) error {
	secret, err := trainjob.BuildMPISSHSecret(tj)
	if err != nil {
		return err
	}
	if err := w.Client.Create(ctx, secret, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
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

// The runtime a TrainJob runs: its snapshot when it has one, else the live
// runtime, which is marked in use (so it cannot be deleted under the
// TrainJob) and frozen into the snapshot before anything is built from it.
// observeRuntime (observe.go) reads; runtimeWrites are what the resolution writes, made
// by the pass's writer before the build's objects.

// runtimeWrites are the writes a runtime's resolution needs, in order; the
// zero value writes nothing.
type runtimeWrites struct {
	// Adopted is a snapshot Kubeflow Trainer wrote, made copse's
	// (trainjob.AdoptRuntimeSnapshot); adoptedTTL says where its TTL came
	// from, for the event.
	Adopted    *corev1.ConfigMap
	AdoptedTTL string
	// MarkInUse is the live runtime with copse's in-use finalizer added,
	// nil when it has it already; Snapshot is the snapshot to create.
	MarkInUse client.Object
	Snapshot  *corev1.ConfigMap
}

// Write makes the resolution's writes. The adopted snapshot is updated with
// an optimistic lock, never recreated, so the cache and the watch see it
// from now on. The runtime is marked in use with the resourceVersion it was
// read at: many TrainJobs of one runtime start together, and one that lost
// the race ends its pass with a conflict and reads the runtime again.
func (rw runtimeWrites) Write(ctx context.Context, w children.Writer, owner client.Object) error {
	tj := owner.(*trainerv1alpha1.TrainJob)
	if rw.Adopted != nil {
		if err := w.Client.Update(ctx, rw.Adopted); err != nil {
			return fmt.Errorf("adopt runtime snapshot %s: %w", rw.Adopted.Name, err)
		}
		w.Recorder.Eventf(tj, rw.Adopted, corev1.EventTypeNormal, reasonRuntimeSnapshotAdopted, "Adopt",
			"adopted runtime snapshot %s, written without copse's labels (by Kubeflow Trainer); ttlSecondsAfterFinished %s",
			rw.Adopted.Name, rw.AdoptedTTL)
	}
	if rw.MarkInUse != nil {
		if err := w.Client.Update(ctx, rw.MarkInUse); err != nil {
			return fmt.Errorf("mark %s %s in use: %w", trainjob.RuntimeKind(tj), rw.MarkInUse.GetName(), err)
		}
	}
	if rw.Snapshot != nil {
		if err := w.Client.Create(ctx, rw.Snapshot); err != nil {
			return fmt.Errorf("create runtime snapshot %s: %w", rw.Snapshot.Name, err)
		}
	}
	return nil
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
