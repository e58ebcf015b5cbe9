package trainjob

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The runtime a TrainJob runs: its snapshot when it has one, else the live
// runtime, which is marked in use (so it cannot be deleted under the
// TrainJob) and frozen into the snapshot before anything is built from it.
// observeRuntime reads; runtimeWrites are what the resolution writes, made
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

// observeRuntime reads the TrainJob's runtime into f (backend, TTL, failure
// policy) and returns it, with what its resolution writes. A finished
// TrainJob only needs the snapshot's TTL and backend, and has no runtime to
// build from.
func (r *Reconciler) observeRuntime(ctx context.Context, f *facts) (trainjob.Runtime, error) {
	tj := f.TrainJob
	runtime, found, err := r.readSnapshot(ctx, f)
	switch {
	case err != nil:
		return trainjob.Runtime{}, err
	case found && finished(tj.Status):
		f.TTL = runtime.Spec.TTLSecondsAfterFinished
		f.Backend = trainjob.BackendOf(&runtime.Spec)
		return trainjob.Runtime{}, nil
	case finished(tj.Status):
		return trainjob.Runtime{}, nil
	case !found:
		if runtime, err = r.readLiveRuntime(ctx, f); err != nil {
			return trainjob.Runtime{}, err
		}
	}
	f.TTL = runtime.Spec.TTLSecondsAfterFinished
	f.FailurePolicy = runtime.Spec.Template.Spec.FailurePolicy != nil
	f.Backend = trainjob.BackendOf(&runtime.Spec)
	return runtime, nil
}

// readSnapshot reads the TrainJob's runtime snapshot; found is false when it
// has none yet. A snapshot another controller wrote (Kubeflow Trainer's,
// before the move to copse) is adopted: the runtime returned is the one the
// adopted snapshot holds, and f.RuntimeWrites the adoption.
func (r *Reconciler) readSnapshot(ctx context.Context, f *facts) (trainjob.Runtime, bool, error) {
	tj := f.TrainJob
	cm, found, err := r.getConfigMap(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.RuntimeSnapshotSuffix})
	if err != nil || !found {
		return trainjob.Runtime{}, false, err
	}
	runtime, err := trainjob.RuntimeFromSnapshot(tj, cm)
	if err != nil || trainjob.IsCopseSnapshot(cm) {
		return runtime, err == nil, err
	}
	// Its TTL comes from the live runtime when the snapshot has none
	// (Trainer's API cannot hold one).
	var ttl *int32
	if runtime.Spec.TTLSecondsAfterFinished == nil {
		live, key, err := trainjob.RuntimeRefTarget(tj)
		if err != nil {
			return trainjob.Runtime{}, false, err
		}
		switch err := r.Client.Get(ctx, key, live); {
		case err == nil:
			ttl = trainjob.RuntimeOf(live).Spec.TTLSecondsAfterFinished
		case !apierrors.IsNotFound(err):
			return trainjob.Runtime{}, false, fmt.Errorf("get %s %s for the TTL of the adopted runtime snapshot: %w", trainjob.RuntimeKind(tj), key.Name, err)
		}
	}
	adopted, err := trainjob.AdoptRuntimeSnapshot(tj, cm, runtime, ttl)
	if err != nil {
		return trainjob.Runtime{}, false, err
	}
	f.RuntimeWrites = runtimeWrites{Adopted: adopted, AdoptedTTL: describeTTL(ttl, runtime.Spec.TTLSecondsAfterFinished)}
	runtime, err = trainjob.RuntimeFromSnapshot(tj, adopted)
	return runtime, err == nil, err
}

// readLiveRuntime reads the runtime the TrainJob's runtimeRef names (a
// TrainingRuntime of its namespace or a ClusterTrainingRuntime) and puts
// into f.RuntimeWrites its marking in use and its snapshot.
func (r *Reconciler) readLiveRuntime(ctx context.Context, f *facts) (trainjob.Runtime, error) {
	tj := f.TrainJob
	live, key, err := trainjob.RuntimeRefTarget(tj)
	if err != nil {
		return trainjob.Runtime{}, err
	}
	if err := r.Client.Get(ctx, key, live); err != nil {
		return trainjob.Runtime{}, fmt.Errorf("get %s %s named by spec.runtimeRef: %w", trainjob.RuntimeKind(tj), key.Name, err)
	}
	if live.GetDeletionTimestamp() != nil {
		return trainjob.Runtime{}, fmt.Errorf("%s %s named by spec.runtimeRef is being deleted", trainjob.RuntimeKind(tj), key.Name)
	}
	runtime := trainjob.RuntimeOf(live)
	snapshot, err := trainjob.BuildRuntimeSnapshot(tj, runtime)
	if err != nil {
		return trainjob.Runtime{}, err
	}
	f.RuntimeWrites = runtimeWrites{Snapshot: snapshot}
	if !controllerutil.ContainsFinalizer(live, trainjob.RuntimeInUseFinalizer) {
		marked := live.DeepCopyObject().(client.Object)
		controllerutil.AddFinalizer(marked, trainjob.RuntimeInUseFinalizer)
		f.RuntimeWrites.MarkInUse = marked
	}
	return runtime, nil
}

// getConfigMap reads a ConfigMap of the TrainJob's: from the cache, which
// holds only copse's, else from the API server, where one another
// controller wrote (Kubeflow Trainer's snapshot and hostfile) is found. found
// is false when neither has it.
func (r *Reconciler) getConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, bool, error) {
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, cm)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get ConfigMap %s: %w", key.Name, err)
	}
	return cm, true, nil
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

// describeTTL says where an adopted snapshot's TTL came from.
func describeTTL(fromLive, inSnapshot *int32) string {
	switch {
	case inSnapshot != nil:
		return fmt.Sprintf("%d from the snapshot", *inSnapshot)
	case fromLive != nil:
		return fmt.Sprintf("%d from the live runtime", *fromLive)
	default:
		return "unset"
	}
}
