package trainjob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/trainjob"
)

// buildHashAnnotation on a JobSet is the hash of what copse built it from, so
// a pass rebuilds a suspended JobSet only when the build changed, not every
// time JobSet's own defaulting made it differ from the build.
const buildHashAnnotation = "copse.dev/trainjob-build-hash"

// apply makes the JobSet backend's objects exist: the MPI Secret (once) and
// hostfile, the Workload and PodGroups and the ComputeDomain before the
// JobSet whose pods use them, then the JobSet. An existing JobSet is rebuilt only while it or the
// TrainJob is suspended: a running JobSet is never changed under its pods
// (as Kubeflow Trainer).
func (r *Reconciler) apply(ctx context.Context, tj *trainerv1alpha1.TrainJob, objects *trainjob.JobSetObjects, existing *jobsetv1alpha2.JobSet) error {
	trainjob.KeepJobSetComputeDomain(objects, tj, existing)
	notRunning := existing == nil || ptr.Deref(existing.Spec.Suspend, false)
	if err := r.ensureMPIObjects(ctx, tj, objects.NeedsMPISSHSecret, objects.MPIHostfile, notRunning); err != nil {
		return err
	}
	if objects.Workload != nil {
		if err := r.ensurePodGroups(ctx, objects); err != nil {
			return err
		}
	}
	if objects.SchedulerPodGroup != nil {
		if err := r.ensureSchedulerPodGroup(ctx, tj, objects.SchedulerPodGroup, notRunning); err != nil {
			return err
		}
	}
	if objects.ComputeDomain != nil {
		if err := r.ensureComputeDomain(ctx, tj, objects.ComputeDomain); err != nil {
			return err
		}
	}
	if existing != nil && !builtByCopse(existing) {
		return r.applyToAdoptedJobSet(ctx, tj, objects.JobSet, existing)
	}
	desired := objects.JobSet
	run := backendObject{kind: "JobSet", desired: desired, spec: desired.Spec, createdReason: reasonJobSetCreated}
	if existing != nil {
		run.existing, run.existingSuspended = existing, ptr.Deref(existing.Spec.Suspend, false)
		// JobSet's webhook takes pod template changes of a JobSet that is
		// suspended or being suspended.
		run.templatesMutable = true
		run.rebuilt = func() client.Object {
			updated := existing.DeepCopy()
			spec := *desired.Spec.DeepCopy()
			keepCreateDefaults(updated.Spec, &spec)
			updated.Spec = spec
			return updated
		}
	}
	return r.ensureBackendObject(ctx, tj, run)
}

// ensureSchedulerPodGroup makes the TrainJob's coscheduling or Volcano
// PodGroup exist before the JobSet whose pods are its members, as Kubeflow
// Trainer does: created when missing, and brought to the build only while
// the TrainJob or its JobSet is suspended (notRunning), never under a
// placed gang. One the TrainJob does not control is left alone, and said
// so: the pods would join someone else's gang.
func (r *Reconciler) ensureSchedulerPodGroup(ctx context.Context, tj *trainerv1alpha1.TrainJob, desired *unstructured.Unstructured, notRunning bool) error {
	kind := desired.GroupVersionKind()
	existing := trainjob.NewSchedulerPodGroup(kind)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, desired.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return refused(opCreate, kind.Kind, desired.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get the %s %s of TrainJob %s: %w", kind.GroupKind(), desired.GetName(), tj.Name, err)
	case !metav1.IsControlledBy(existing, tj):
		return fmt.Errorf("%s %s exists but is not controlled by TrainJob %s: copse leaves it alone", kind.GroupKind(), desired.GetName(), tj.Name)
	case !(ptr.Deref(tj.Spec.Suspend, false) || notRunning) || !trainjob.SchedulerPodGroupSpecDiffers(existing, desired):
		return nil
	}
	updated := existing.DeepCopy()
	spec, _, _ := unstructured.NestedMap(desired.Object, "spec")
	current, _, _ := unstructured.NestedMap(updated.Object, "spec")
	if current == nil {
		current = map[string]any{}
	}
	for key, value := range spec {
		current[key] = value
	}
	if err := unstructured.SetNestedMap(updated.Object, current, "spec"); err != nil {
		return fmt.Errorf("rebuild the %s %s of TrainJob %s: %w", kind.GroupKind(), desired.GetName(), tj.Name, err)
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		return refused(opUpdate, kind.Kind, desired.GetName(), err)
	}
	return nil
}

// ensureComputeDomain creates the TrainJob's ComputeDomain (MNNVL) if it
// does not exist; its spec is immutable, so one that exists is left as it
// is, unless the TrainJob does not control it: then copse leaves it alone
// and says so, as the JobSet's pods would join someone else's domain.
func (r *Reconciler) ensureComputeDomain(ctx context.Context, tj *trainerv1alpha1.TrainJob, desired *unstructured.Unstructured) error {
	existing := mnnvl.NewComputeDomain()
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case err == nil && metav1.IsControlledBy(existing, tj):
		return nil
	case err == nil:
		return fmt.Errorf("ComputeDomain %s exists but is not controlled by TrainJob %s: copse leaves it alone", desired.GetName(), tj.Name)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get the ComputeDomain %s of TrainJob %s: %w", desired.GetName(), tj.Name, err)
	}
	if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
		return refused(opCreate, "ComputeDomain", desired.GetName(), err)
	}
	return nil
}

// applyPodCliqueSet makes the PodCliqueSet backend's objects exist: the MPI
// Secret (once) and hostfile before the PodCliqueSet whose pods mount them,
// then the PodCliqueSet, rebuilt on the same rule as a JobSet. Its
// spec.suspend follows the TrainJob's, which the build carries. A Training
// PodCliqueSet takes pod template changes only once suspended with no run
// in progress (copsev1alpha1.PodCliqueSet.SchedulingDirectivesMutable), so
// a rebuild that also suspends it goes in two steps (decideRebuild).
func (r *Reconciler) applyPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob, objects *trainjob.PodCliqueSetObjects, existing *copsev1alpha1.PodCliqueSet) error {
	notRunning := existing == nil || ptr.Deref(existing.Spec.Suspend, false)
	if err := r.ensureMPIObjects(ctx, tj, objects.NeedsMPISSHSecret, objects.MPIHostfile, notRunning); err != nil {
		return err
	}
	desired := objects.PodCliqueSet
	run := backendObject{kind: "PodCliqueSet", desired: desired, spec: desired.Spec, createdReason: reasonPodCliqueSetCreated}
	if existing != nil {
		existingSuspended := existing.IsSuspended()
		run.existing, run.existingSuspended = existing, existingSuspended
		run.templatesMutable = existing.SchedulingDirectivesMutable()
		// The build as it would be with the existing object's suspend: its
		// hash is the existing one's when nothing else changed.
		sameSuspend := desired.Spec.DeepCopy()
		sameSuspend.Suspend = ptr.To(existingSuspended)
		run.specWithExistingSuspend = *sameSuspend
		run.rebuilt = func() client.Object {
			updated := existing.DeepCopy()
			updated.Spec = *desired.Spec.DeepCopy()
			return updated
		}
		run.suspended = func() client.Object {
			updated := existing.DeepCopy()
			updated.Spec.Suspend = ptr.To(true)
			return updated
		}
	}
	return r.ensureBackendObject(ctx, tj, run)
}

// backendObject is a backend's JobSet or PodCliqueSet as built, and the one
// that exists.
type backendObject struct {
	kind string
	// desired is the build; spec is its spec, hashed with its labels and
	// annotations.
	desired client.Object
	spec    any
	// existing is nil when there is none; rebuilt returns a copy of it
	// carrying the desired spec.
	existing          client.Object
	existingSuspended bool
	rebuilt           func() client.Object
	// templatesMutable: the existing object's admission takes a change of
	// its pod templates now.
	templatesMutable bool
	// specWithExistingSuspend is the desired spec with the existing
	// object's spec.suspend, and suspended returns a copy of the existing
	// object with only spec.suspend set; both are nil where templates are
	// always mutable when a rebuild may happen (JobSet).
	specWithExistingSuspend any
	suspended               func() client.Object
	createdReason           string
}

// rebuildStep is what a pass does to an existing backend object.
type rebuildStep int

const (
	// rebuildNone: it is as built, or it runs (never changed under its pods).
	rebuildNone rebuildStep = iota
	// rebuildAll: update it to the build in one write.
	rebuildAll
	// rebuildSuspendFirst: set only spec.suspend now; the rest of the build
	// once its pods are gone (its admission refuses template changes of a
	// running object).
	rebuildSuspendFirst
	// rebuildWaitForPods: suspended, but its pods are still going away;
	// the object's status change once they are gone brings the TrainJob back.
	rebuildWaitForPods
)

// rebuildInputs are the plain values decideRebuild reads.
type rebuildInputs struct {
	// BuildChanged: the build's hash differs from the one the object was
	// built from; OnlySuspendChanged: it would not with the object's
	// spec.suspend.
	BuildChanged       bool
	OnlySuspendChanged bool
	TrainJobSuspended  bool
	ExistingSuspended  bool
	// TemplatesMutable: the object's admission takes pod template changes
	// now.
	TemplatesMutable bool
}

// decideRebuild picks the step that brings an existing backend object to
// its build. Only a suspended object, or one of a suspended TrainJob, is
// rebuilt. A change of spec.suspend alone is always taken at once; any
// other change waits until the object accepts it: a running object is
// suspended first (e.g. Kueue stops a TrainJob and clears its runtime patch
// in quick succession), then rebuilt once its pods are gone.
func decideRebuild(in rebuildInputs) rebuildStep {
	switch {
	case !in.BuildChanged, !in.TrainJobSuspended && !in.ExistingSuspended:
		return rebuildNone
	case in.OnlySuspendChanged, in.TemplatesMutable:
		return rebuildAll
	case !in.ExistingSuspended:
		return rebuildSuspendFirst
	default:
		return rebuildWaitForPods
	}
}

// ensureBackendObject creates the backend's object, stamped with the hash of
// its build, or rebuilds an existing one whose build changed while it or the
// TrainJob is suspended.
func (r *Reconciler) ensureBackendObject(ctx context.Context, tj *trainerv1alpha1.TrainJob, run backendObject) error {
	desired := run.desired
	hash, err := buildHash(desired.GetName(), desired.GetLabels(), desired.GetAnnotations(), run.spec)
	if err != nil {
		return err
	}
	hashWithExistingSuspend := ""
	if run.specWithExistingSuspend != nil {
		if hashWithExistingSuspend, err = buildHash(desired.GetName(), desired.GetLabels(), desired.GetAnnotations(), run.specWithExistingSuspend); err != nil {
			return err
		}
	}
	desired.SetAnnotations(labels.Merge(desired.GetAnnotations(), map[string]string{buildHashAnnotation: hash}))

	if run.existing == nil {
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return refused(opCreate, run.kind, desired.GetName(), err)
		}
		r.Recorder.Eventf(tj, desired, corev1.EventTypeNormal, run.createdReason, "Create", "created %s %s", run.kind, desired.GetName())
		return nil
	}
	existingHash := run.existing.GetAnnotations()[buildHashAnnotation]
	in := rebuildInputs{
		BuildChanged:      existingHash != hash,
		TrainJobSuspended: ptr.Deref(tj.Spec.Suspend, false),
		ExistingSuspended: run.existingSuspended,
		TemplatesMutable:  run.templatesMutable,
		// Where templates are always mutable it does not matter.
		OnlySuspendChanged: run.specWithExistingSuspend != nil && hashWithExistingSuspend == existingHash,
	}
	var updated client.Object
	switch decideRebuild(in) {
	case rebuildNone:
		return nil
	case rebuildWaitForPods:
		log.FromContext(ctx).V(1).Info("the build changed: rebuilding once the suspended object's pods are gone", "kind", run.kind)
		return nil
	case rebuildSuspendFirst:
		// The old build hash stays: the next pass still sees the rest
		// of the build to apply.
		updated = run.suspended()
	case rebuildAll:
		updated = run.rebuilt()
		updated.SetLabels(maps.Clone(desired.GetLabels()))
		updated.SetAnnotations(maps.Clone(desired.GetAnnotations()))
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		// Admission may refuse the rebuilt object (e.g. a runtime patch
		// that changes more than a suspended Training PodCliqueSet
		// allows): settle records it on the TrainJob.
		return refused(opUpdate, run.kind, updated.GetName(), err)
	}
	return nil
}

// ensureMPIObjects makes the MPI SSH Secret, only while the backend's object
// does not run yet (the one time it is needed), and the hostfile.
func (r *Reconciler) ensureMPIObjects(ctx context.Context, tj *trainerv1alpha1.TrainJob, needsSecret bool, hostfile *corev1.ConfigMap, notRunning bool) error {
	if needsSecret && notRunning {
		if err := r.ensureMPISecret(ctx, tj); err != nil {
			return err
		}
	}
	if hostfile != nil {
		return r.ensureConfigMap(ctx, hostfile)
	}
	return nil
}

// ensurePodGroups makes the TrainJob's Workload and PodGroups exist before
// any of its pods: a pod whose PodGroup is missing is not scheduled, and a
// gang whose PodGroup comes late could be placed piecemeal. Both are
// immutable once created and kept while the TrainJob is suspended
// (KEP-3015), so they are only ever created. The Workload is made only for
// a PodGroup to be made: PodGroups that exist keep the Workload they name
// (a TrainJob's Workload was named after it alone before it was
// <trainjob>.trainjob).
func (r *Reconciler) ensurePodGroups(ctx context.Context, objects *trainjob.JobSetObjects) error {
	var missing []string
	for _, podGroup := range trainjob.BuildPodGroups(objects.Plan, "") {
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(podGroup), &schedulingv1beta1.PodGroup{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, podGroup.Name)
		case err != nil:
			return fmt.Errorf("get PodGroup %s: %w", podGroup.Name, err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	workload := &schedulingv1beta1.Workload{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(objects.Workload), workload)
	switch {
	case apierrors.IsNotFound(err):
		workload = objects.Workload.DeepCopy()
		if err := r.Client.Create(ctx, workload); err != nil {
			return refused(opCreate, "Workload", objects.Workload.Name, err)
		}
	case err != nil:
		return fmt.Errorf("get Workload %s: %w", objects.Workload.Name, err)
	}
	for _, podGroup := range trainjob.BuildPodGroups(objects.Plan, string(workload.UID)) {
		if !slices.Contains(missing, podGroup.Name) {
			continue
		}
		if err := r.Client.Create(ctx, podGroup); err != nil && !apierrors.IsAlreadyExists(err) {
			return refused(opCreate, "PodGroup", podGroup.Name, err)
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
		return refused(opCreate, "Secret", secret.Name, err)
	}
	return nil
}

// ensureConfigMap creates a ConfigMap, or updates its data when it differs;
// one another controller made (Kubeflow Trainer's hostfile) gets copse's
// labels too, which adopt it.
func (r *Reconciler) ensureConfigMap(ctx context.Context, desired *corev1.ConfigMap) error {
	existing, found, err := r.getConfigMap(ctx, client.ObjectKeyFromObject(desired))
	switch {
	case err != nil:
		return err
	case !found:
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return refused(opCreate, "ConfigMap", desired.Name, err)
		}
		return nil
	case maps.Equal(existing.Data, desired.Data) && existing.Labels[labels.ManagedByKey] == labels.ManagedByValue:
		return nil
	}
	existing.Data = desired.Data
	existing.Labels = labels.Merge(existing.Labels, desired.Labels)
	if err := r.Client.Update(ctx, existing); err != nil {
		return refused(opUpdate, "ConfigMap", desired.Name, err)
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
