// Package trainjob holds the admission webhooks of the trainer.kubeflow.org
// kinds: the TrainJob's defaulting (runtime patch times) and validation
// against its runtime (Kubeflow Trainer's rules, internal/trainjob.Validate),
// and the runtimes' validation and TTL warning. The CRDs' schema and CEL
// rules come first; these are the rules that need the runtime or the old
// object.
package trainjob

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/trainjob"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var runtimePatchesPath = field.NewPath("spec", "runtimePatches")

// Defaulter stamps each runtime patch with the time it last changed, as
// Kubeflow Trainer does: set on create, kept on update for a patch that did
// not change, renewed for one that did; and gives a new TrainJob copse runs
// that names no MNNVL group the operator's mnnvl.defaultGroup
// (mnnvl.WithDefaultGroup).
type Defaulter struct {
	Clock clock.PassiveClock
	// MNNVLDefaultGroup is the operator configuration's mnnvl.defaultGroup.
	MNNVLDefaultGroup string
}

var _ admission.Defaulter[*trainerv1alpha1.TrainJob] = Defaulter{}

// Default implements admission.Defaulter.
func (d Defaulter) Default(ctx context.Context, tj *trainerv1alpha1.TrainJob) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	var old *trainerv1alpha1.TrainJob
	if req.Operation == admissionv1.Update {
		old = &trainerv1alpha1.TrainJob{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return fmt.Errorf("decode the old TrainJob: %w", err)
		}
	}
	StampRuntimePatches(old, tj, metav1.NewTime(d.Clock.Now()))
	// The group is fixed at creation (the validator keeps it); a TrainJob
	// another cluster runs is that cluster's to default.
	if req.Operation == admissionv1.Create &&
		ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) == trainerv1alpha1.ManagedByTrainJobController {
		tj.Annotations, _ = mnnvl.WithDefaultGroup(tj.Annotations, d.MNNVLDefaultGroup)
	}
	return nil
}

// StampRuntimePatches sets runtimePatches[].time: now for a patch that is new
// or changed, the old time for one that is the same.
func StampRuntimePatches(old, tj *trainerv1alpha1.TrainJob, now metav1.Time) {
	previous := map[string]trainerv1alpha1.RuntimePatch{}
	if old != nil {
		for _, p := range old.Spec.RuntimePatches {
			previous[p.Manager] = p
		}
	}
	for i := range tj.Spec.RuntimePatches {
		patch := &tj.Spec.RuntimePatches[i]
		before, existed := previous[patch.Manager]
		switch {
		case existed && samePatch(before, *patch):
			patch.Time = before.Time
		case existed || patch.Time == nil:
			patch.Time = ptr.To(now)
		}
	}
}

func samePatch(a, b trainerv1alpha1.RuntimePatch) bool {
	a.Time, b.Time = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// Validator checks a TrainJob against its runtime. Reader reads runtimes and
// JobSets from the API server (not a cache that may lag).
type Validator struct {
	Reader client.Reader
	// MNNVLEnabled is the operator configuration's mnnvl.enabled: without
	// it, a TrainJob naming an MNNVL group other than "none" is refused.
	MNNVLEnabled bool
}

// mnnvlGroupPath is the TrainJob's MNNVL group annotation.
var mnnvlGroupPath = field.NewPath("metadata", "annotations").Key(mnnvl.GroupAnnotation)

var _ admission.Validator[*trainerv1alpha1.TrainJob] = Validator{}

// ValidateCreate implements admission.Validator: the runtime must exist,
// the TrainJob must fit it, and its name must be short enough for the
// object the runtime's backend makes of it (validateBackendNames).
func (v Validator) ValidateCreate(ctx context.Context, tj *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	var errs field.ErrorList
	if group, ok := tj.Annotations[mnnvl.GroupAnnotation]; ok {
		if err := mnnvl.ValidateGroup(mnnvlGroupPath, group, v.MNNVLEnabled); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, v.validate(ctx, nil, tj)...)
	return nil, rules.ToGroupAdmissionError(trainerv1alpha1.GroupName, "TrainJob", tj.Name, errs)
}

// ValidateUpdate implements admission.Validator: as on create, and runtime
// patches change only while the TrainJob is suspended (before or after the
// change) and its JobSet has no active Job.
func (v Validator) ValidateUpdate(ctx context.Context, old, tj *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	// The MNNVL group is fixed at creation: its ComputeDomain is made for it.
	var errs field.ErrorList
	if err := mnnvl.ValidateGroupUnchanged(mnnvlGroupPath, old.Annotations, tj.Annotations); err != nil {
		errs = append(errs, err)
	}
	if !equality.Semantic.DeepEqual(old.Spec, tj.Spec) {
		errs = append(errs, v.validate(ctx, old, tj)...)
	}
	return nil, rules.ToGroupAdmissionError(trainerv1alpha1.GroupName, "TrainJob", tj.Name, errs)
}

// ValidateDelete implements admission.Validator; deleting is always allowed.
func (Validator) ValidateDelete(context.Context, *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	return nil, nil
}

func (v Validator) validate(ctx context.Context, old, tj *trainerv1alpha1.TrainJob) field.ErrorList {
	if ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) != trainerv1alpha1.ManagedByTrainJobController {
		return nil // validated by the cluster that runs it
	}
	errs := v.validatePatchChange(ctx, old, tj)
	runtime, err := v.runtime(ctx, tj)
	if err != nil {
		return append(errs, field.Invalid(field.NewPath("spec", "runtimeRef"), tj.Spec.RuntimeRef,
			fmt.Sprintf("%v: the runtime must exist before the TrainJob", err)))
	}
	plan, err := trainjob.NewPlan(tj, runtime)
	if err != nil {
		return append(errs, field.Invalid(runtimePatchesPath, tj.Spec.RuntimePatches, err.Error()))
	}
	errs = append(errs, trainjob.Validate(plan)...)
	errs = append(errs, trainjob.VolcanoPriorityClassErrors(plan, v.priorityClassExists(ctx))...)
	if old == nil {
		// Only on create: a name never changes, and a TrainJob admitted
		// before these rules must stay updatable (suspend, Kueue's
		// patches), as must one whose ComputeDomain was named before.
		errs = append(errs, validateBackendNames(tj, runtime)...)
		if v.MNNVLEnabled {
			errs = append(errs, trainjob.ValidateComputeDomainName(plan)...)
		}
	}
	return errs
}

// validatePatchChange: Kueue changes runtime patches and suspend in one
// update, so a change is allowed when the TrainJob is suspended before or
// after it, and never while a Job of its JobSet is still active.
func (v Validator) validatePatchChange(ctx context.Context, old, tj *trainerv1alpha1.TrainJob) field.ErrorList {
	if old == nil || equality.Semantic.DeepEqual(old.Spec.RuntimePatches, tj.Spec.RuntimePatches) {
		return nil
	}
	if !ptr.Deref(old.Spec.Suspend, false) && !ptr.Deref(tj.Spec.Suspend, false) {
		return field.ErrorList{field.Forbidden(runtimePatchesPath, "RuntimePatches can only be modified when the TrainJob is suspended before or after the update")}
	}
	jobSet := &jobsetv1alpha2.JobSet{}
	err := v.Reader.Get(ctx, client.ObjectKeyFromObject(tj), jobSet)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return field.ErrorList{field.InternalError(runtimePatchesPath, err)}
	}
	var errs field.ErrorList
	for _, rjob := range jobSet.Status.ReplicatedJobsStatus {
		if rjob.Active > 0 {
			errs = append(errs, field.Forbidden(runtimePatchesPath,
				fmt.Sprintf("RuntimePatches cannot be modified while replicated job %s of JobSet %s is still active", rjob.Name, jobSet.Name)))
		}
	}
	return errs
}

// priorityClassExists reads whether a PriorityClass exists, from the API
// server.
//
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get
func (v Validator) priorityClassExists(ctx context.Context) func(string) (bool, error) {
	return func(name string) (bool, error) {
		err := v.Reader.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

// runtime reads the runtime the TrainJob names.
func (v Validator) runtime(ctx context.Context, tj *trainerv1alpha1.TrainJob) (trainjob.Runtime, error) {
	obj, key, err := trainjob.RuntimeRefTarget(tj)
	if err != nil {
		return trainjob.Runtime{}, err
	}
	if err := v.Reader.Get(ctx, key, obj); err != nil {
		return trainjob.Runtime{}, err
	}
	return trainjob.RuntimeOf(obj), nil
}
