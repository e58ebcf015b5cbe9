// Package trainingruntime holds the controller that releases a
// TrainingRuntime or ClusterTrainingRuntime once no TrainJob needs it.
//
// The TrainJob controller marks a runtime in use (finalizer
// trainer.kubeflow.org/resource-in-use) before it freezes it into a
// TrainJob's snapshot. A runtime that is being deleted keeps the finalizer
// while a TrainJob that has not finished references it, so that a TrainJob
// created just before the deletion can still be resolved; then this
// controller removes it and the deletion completes.
package trainingruntime

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "trainingruntime"

// runtimeRefIndex indexes TrainJobs by the runtime they name:
// "<kind>/<namespace>/<name>", the namespace empty for a
// ClusterTrainingRuntime.
const runtimeRefIndex = "spec.runtimeRef"

// Reconciler releases runtimes that are being deleted and no longer used.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch

// Reconcile removes the in-use finalizer of a runtime being deleted once no
// unfinished TrainJob references it. req.Namespace is empty for a
// ClusterTrainingRuntime.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	for _, obj := range []client.Object{&trainerv1alpha1.TrainingRuntime{}, &trainerv1alpha1.ClusterTrainingRuntime{}} {
		kind := kindOf(obj)
		if (req.Namespace == "") != (kind == trainerv1alpha1.ClusterTrainingRuntimeKind) {
			continue
		}
		if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if obj.GetDeletionTimestamp() == nil || !controllerutil.ContainsFinalizer(obj, trainjob.RuntimeInUseFinalizer) {
			return ctrl.Result{}, nil
		}
		users, err := r.unfinishedUsers(ctx, kind, req.Namespace, req.Name)
		if err != nil || users > 0 {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(obj, trainjob.RuntimeInUseFinalizer)
		if err := r.Client.Update(ctx, obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("release %s %s: %w", kind, req.Name, err)
		}
	}
	return ctrl.Result{}, nil
}

// unfinishedUsers counts the TrainJobs naming the runtime that have neither
// completed nor failed.
func (r *Reconciler) unfinishedUsers(ctx context.Context, kind, namespace, name string) (int, error) {
	list := &trainerv1alpha1.TrainJobList{}
	opts := []client.ListOption{client.MatchingFields{runtimeRefIndex: indexKey(kind, namespace, name)}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return 0, fmt.Errorf("list the TrainJobs of %s %s: %w", kind, name, err)
	}
	users := 0
	for _, tj := range list.Items {
		if !meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobComplete) &&
			!meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobFailed) {
			users++
		}
	}
	return users, nil
}

// SetupWithManager indexes TrainJobs by runtime and reacts to runtimes and to
// the TrainJobs that name them (one finishing or going away may release its
// runtime).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &trainerv1alpha1.TrainJob{}, runtimeRefIndex, runtimeRefOf); err != nil {
		return fmt.Errorf("index TrainJobs by runtime: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&trainerv1alpha1.TrainingRuntime{}).
		Watches(&trainerv1alpha1.ClusterTrainingRuntime{}, &handler.EnqueueRequestForObject{}).
		Watches(&trainerv1alpha1.TrainJob{}, handler.EnqueueRequestsFromMapFunc(runtimeOf)).
		Complete(r)
}

// runtimeRefOf is a TrainJob's runtimeRefIndex key.
func runtimeRefOf(obj client.Object) []string {
	tj := obj.(*trainerv1alpha1.TrainJob)
	kind := trainjob.RuntimeKind(tj)
	namespace := tj.Namespace
	if kind == trainerv1alpha1.ClusterTrainingRuntimeKind {
		namespace = ""
	}
	return []string{indexKey(kind, namespace, tj.Spec.RuntimeRef.Name)}
}

func runtimeOf(_ context.Context, obj client.Object) []reconcile.Request {
	tj, ok := obj.(*trainerv1alpha1.TrainJob)
	if !ok {
		return nil
	}
	key := client.ObjectKey{Namespace: tj.Namespace, Name: tj.Spec.RuntimeRef.Name}
	if trainjob.RuntimeKind(tj) == trainerv1alpha1.ClusterTrainingRuntimeKind {
		key.Namespace = ""
	}
	return []reconcile.Request{{NamespacedName: key}}
}

func indexKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*trainerv1alpha1.ClusterTrainingRuntime); ok {
		return trainerv1alpha1.ClusterTrainingRuntimeKind
	}
	return trainerv1alpha1.TrainingRuntimeKind
}
