package trainjob

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// resolveRuntime returns the runtime a TrainJob runs: its snapshot when it
// has one, else the live runtime, which is first marked in use (so it cannot
// be deleted under the TrainJob) and then frozen into the snapshot, before
// anything is built from it.
func (r *Reconciler) resolveRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob) (trainjob.Runtime, error) {
	runtime, found, err := r.readSnapshot(ctx, tj)
	if err != nil || found {
		return runtime, err
	}
	var live client.Object
	// Many TrainJobs of one runtime start together; each marks it in use,
	// so a write that lost the race reads the runtime again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if live, err = r.liveRuntime(ctx, tj); err != nil {
			return err
		}
		if controllerutil.ContainsFinalizer(live, trainjob.RuntimeInUseFinalizer) {
			return nil
		}
		controllerutil.AddFinalizer(live, trainjob.RuntimeInUseFinalizer)
		return r.Client.Update(ctx, live)
	})
	if err != nil {
		return trainjob.Runtime{}, fmt.Errorf("mark %s %s in use: %w", trainjob.RuntimeKind(tj), tj.Spec.RuntimeRef.Name, err)
	}
	runtime = trainjob.RuntimeOf(live)
	snapshot, err := trainjob.BuildRuntimeSnapshot(tj, runtime)
	if err != nil {
		return trainjob.Runtime{}, err
	}
	if err := r.Client.Create(ctx, snapshot); err != nil {
		return trainjob.Runtime{}, fmt.Errorf("create runtime snapshot %s: %w", snapshot.Name, err)
	}
	return runtime, nil
}

// readSnapshot reads the TrainJob's runtime snapshot; found is false when it
// has none yet. A snapshot another controller wrote (Kubeflow Trainer's,
// before the move to copse) is adopted first (adoptSnapshot).
func (r *Reconciler) readSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob) (trainjob.Runtime, bool, error) {
	cm, found, err := r.getConfigMap(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.RuntimeSnapshotSuffix})
	if err != nil || !found {
		return trainjob.Runtime{}, false, err
	}
	runtime, err := trainjob.RuntimeFromSnapshot(tj, cm)
	if err != nil {
		return trainjob.Runtime{}, false, err
	}
	if !trainjob.IsCopseSnapshot(cm) {
		if runtime, err = r.adoptSnapshot(ctx, tj, cm, runtime); err != nil {
			return trainjob.Runtime{}, false, err
		}
	}
	return runtime, true, nil
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

// adoptSnapshot makes a runtime snapshot Kubeflow Trainer wrote copse's
// (trainjob.AdoptRuntimeSnapshot): labelled, so the cache and the watch see
// it from now on, and with the live runtime's ttlSecondsAfterFinished,
// which Trainer's API cannot hold. The ConfigMap is updated with an
// optimistic lock, never recreated, and the runtime it returns is the one
// the snapshot now holds.
func (r *Reconciler) adoptSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob, cm *corev1.ConfigMap, runtime trainjob.Runtime) (trainjob.Runtime, error) {
	var ttl *int32
	if runtime.Spec.TTLSecondsAfterFinished == nil {
		live, key, err := trainjob.RuntimeRefTarget(tj)
		if err != nil {
			return trainjob.Runtime{}, err
		}
		switch err := r.Client.Get(ctx, key, live); {
		case err == nil:
			ttl = trainjob.RuntimeOf(live).Spec.TTLSecondsAfterFinished
		case !apierrors.IsNotFound(err):
			return trainjob.Runtime{}, fmt.Errorf("get %s %s for the TTL of the adopted runtime snapshot: %w", trainjob.RuntimeKind(tj), key.Name, err)
		}
	}
	adopted, err := trainjob.AdoptRuntimeSnapshot(tj, cm, runtime, ttl)
	if err != nil {
		return trainjob.Runtime{}, err
	}
	if err := r.Client.Update(ctx, adopted); err != nil {
		return trainjob.Runtime{}, fmt.Errorf("adopt runtime snapshot %s: %w", cm.Name, err)
	}
	r.Recorder.Eventf(tj, adopted, corev1.EventTypeNormal, reasonRuntimeSnapshotAdopted, "Adopt",
		"adopted runtime snapshot %s, written without copse's labels (by Kubeflow Trainer); ttlSecondsAfterFinished %s",
		cm.Name, describeTTL(ttl, runtime.Spec.TTLSecondsAfterFinished))
	return trainjob.RuntimeFromSnapshot(tj, adopted)
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

// liveRuntime gets the runtime the TrainJob's runtimeRef names: a
// TrainingRuntime of its namespace or a ClusterTrainingRuntime.
func (r *Reconciler) liveRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob) (client.Object, error) {
	obj, key, err := trainjob.RuntimeRefTarget(tj)
	if err != nil {
		return nil, err
	}
	if err := r.Client.Get(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("get %s %s named by spec.runtimeRef: %w", trainjob.RuntimeKind(tj), key.Name, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("%s %s named by spec.runtimeRef is being deleted", trainjob.RuntimeKind(tj), key.Name)
	}
	return obj, nil
}
