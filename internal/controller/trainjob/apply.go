package trainjob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// buildHashAnnotation on a JobSet is the hash of what copse built it from, so
// a pass rebuilds a suspended JobSet only when the build changed, not every
// time JobSet's own defaulting made it differ from the build.
const buildHashAnnotation = "copse.dev/trainjob-build-hash"

// apply makes the TrainJob's objects exist: the MPI Secret (once) and
// hostfile before the JobSet whose pods mount them, then the JobSet. An
// existing JobSet is rebuilt only while it or the TrainJob is suspended:
// a running JobSet is never changed under its pods (as Kubeflow Trainer).
func (r *Reconciler) apply(ctx context.Context, tj *trainerv1alpha1.TrainJob, objects *trainjob.JobSetObjects, existing *jobsetv1alpha2.JobSet) error {
	if objects.NeedsMPISSHSecret && (existing == nil || ptr.Deref(existing.Spec.Suspend, false)) {
		if err := r.ensureMPISecret(ctx, tj); err != nil {
			return err
		}
	}
	if objects.MPIHostfile != nil {
		if err := r.ensureConfigMap(ctx, objects.MPIHostfile); err != nil {
			return err
		}
	}
	if objects.Workload != nil {
		if err := r.ensurePodGroups(ctx, objects); err != nil {
			return err
		}
	}
	desired := objects.JobSet
	hash, err := buildHash(desired.Name, desired.Labels, desired.Annotations, desired.Spec)
	if err != nil {
		return err
	}
	if desired.Annotations == nil {
		desired.Annotations = map[string]string{}
	}
	desired.Annotations[buildHashAnnotation] = hash

	if existing == nil {
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create JobSet %s: %w", desired.Name, err)
		}
		r.Recorder.Eventf(tj, desired, corev1.EventTypeNormal, reasonJobSetCreated, "Create", "created JobSet %s", desired.Name)
		return nil
	}
	rebuildable := ptr.Deref(tj.Spec.Suspend, false) || ptr.Deref(existing.Spec.Suspend, false)
	if !rebuildable || existing.Annotations[buildHashAnnotation] == hash {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = maps.Clone(desired.Labels)
	updated.Annotations = maps.Clone(desired.Annotations)
	spec := *desired.Spec.DeepCopy()
	keepCreateDefaults(updated.Spec, &spec)
	updated.Spec = spec
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("rebuild suspended JobSet %s: %w", updated.Name, err)
	}
	return nil
}

// applyPodCliqueSet makes the PodCliqueSet backend's objects exist: the MPI
// Secret (once) and hostfile before the PodCliqueSet whose pods mount them,
// then the PodCliqueSet. As on the JobSet backend, an existing PodCliqueSet
// is rebuilt only while it or the TrainJob is suspended, and only when the
// build changed; its spec.suspend follows the TrainJob's, which the build
// carries.
func (r *Reconciler) applyPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob, objects *trainjob.PodCliqueSetObjects, existing *copsev1alpha1.PodCliqueSet) error {
	if objects.NeedsMPISSHSecret && (existing == nil || ptr.Deref(existing.Spec.Suspend, false)) {
		if err := r.ensureMPISecret(ctx, tj); err != nil {
			return err
		}
	}
	if objects.MPIHostfile != nil {
		if err := r.ensureConfigMap(ctx, objects.MPIHostfile); err != nil {
			return err
		}
	}
	desired := objects.PodCliqueSet
	hash, err := buildHash(desired.Name, desired.Labels, desired.Annotations, desired.Spec)
	if err != nil {
		return err
	}
	if desired.Annotations == nil {
		desired.Annotations = map[string]string{}
	}
	desired.Annotations[buildHashAnnotation] = hash

	if existing == nil {
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PodCliqueSet %s: %w", desired.Name, err)
		}
		r.Recorder.Eventf(tj, desired, corev1.EventTypeNormal, reasonPodCliqueSetCreated, "Create", "created PodCliqueSet %s", desired.Name)
		return nil
	}
	rebuildable := ptr.Deref(tj.Spec.Suspend, false) || ptr.Deref(existing.Spec.Suspend, false)
	if !rebuildable || existing.Annotations[buildHashAnnotation] == hash {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = maps.Clone(desired.Labels)
	updated.Annotations = maps.Clone(desired.Annotations)
	updated.Spec = *desired.Spec.DeepCopy()
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("rebuild suspended PodCliqueSet %s: %w", updated.Name, err)
	}
	return nil
}

// ensurePodGroups makes the TrainJob's Workload and PodGroups exist before
// any of its pods: a pod whose PodGroup is missing is not scheduled, and a
// gang whose PodGroup comes late could be placed piecemeal. Both are
// immutable once created and kept while the TrainJob is suspended
// (KEP-3015), so they are only ever created.
func (r *Reconciler) ensurePodGroups(ctx context.Context, objects *trainjob.JobSetObjects) error {
	workload := &schedulingv1beta1.Workload{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(objects.Workload), workload)
	switch {
	case apierrors.IsNotFound(err):
		workload = objects.Workload.DeepCopy()
		if err := r.Client.Create(ctx, workload); err != nil {
			return fmt.Errorf("create Workload %s: %w", objects.Workload.Name, err)
		}
	case err != nil:
		return fmt.Errorf("get Workload %s: %w", objects.Workload.Name, err)
	}
	for _, podGroup := range trainjob.BuildPodGroups(objects.Plan, string(workload.UID)) {
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(podGroup), &schedulingv1beta1.PodGroup{})
		if !apierrors.IsNotFound(err) {
			if err != nil {
				return fmt.Errorf("get PodGroup %s: %w", podGroup.Name, err)
			}
			continue
		}
		if err := r.Client.Create(ctx, podGroup); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PodGroup %s: %w", podGroup.Name, err)
		}
	}
	return nil
}

// ensureMPISecret creates the TrainJob's SSH identity once; it is immutable
// and kept for the TrainJob's life. copse never reads Secrets (its RBAC
// only creates them): an existing one answers AlreadyExists. The key is
// made only while the JobSet is not running yet, the one time it is needed.
func (r *Reconciler) ensureMPISecret(ctx context.Context, tj *trainerv1alpha1.TrainJob) error {
	secret, err := trainjob.BuildMPISSHSecret(tj)
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create MPI SSH Secret %s: %w", secret.Name, err)
	}
	return nil
}

// ensureConfigMap creates a ConfigMap, or updates its data when it differs.
func (r *Reconciler) ensureConfigMap(ctx context.Context, desired *corev1.ConfigMap) error {
	existing := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ConfigMap %s: %w", desired.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get ConfigMap %s: %w", desired.Name, err)
	case maps.Equal(existing.Data, desired.Data):
		return nil
	}
	existing.Data = desired.Data
	if err := r.Client.Update(ctx, existing); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", desired.Name, err)
	}
	return nil
}

// buildHash is the first 16 hex digits of the SHA-256 of a built object's
// labels, annotations and spec.
func buildHash(name string, objLabels, annotations map[string]string, spec any) (string, error) {
	raw, err := json.Marshal(struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Spec        any               `json:"spec"`
	}{objLabels, annotations, spec})
	if err != nil {
		return "", fmt.Errorf("hash the build of %s: %w", name, err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:16], nil
}
