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
// has none yet.
func (r *Reconciler) readSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob) (trainjob.Runtime, bool, error) {
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.RuntimeSnapshotSuffix}, cm)
	if apierrors.IsNotFound(err) {
		return trainjob.Runtime{}, false, nil
	}
	if err != nil {
		return trainjob.Runtime{}, false, fmt.Errorf("get the runtime snapshot of TrainJob %s: %w", tj.Name, err)
	}
	runtime, err := trainjob.RuntimeFromSnapshot(tj, cm)
	return runtime, err == nil, err
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
