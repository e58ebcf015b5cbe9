package trainjob

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// What a pass writes of a TrainJob's build, decided from the build and what
// the observe step found of it (decideWrites, pure), then written in order by
// the pass's writer (buildWrites, apply.go). An object copse keeps in line with the build is
// applied server-side with the field owner FieldOwner: the JobSet and the
// PodCliqueSet, the coscheduling or Volcano PodGroup and the MPI hostfile.
// An object whose spec is immutable and that copse only ever creates (the
// Workload and its PodGroups, the ComputeDomain, the MPI SSH Secret) is
// created with that field owner, and an existing one is never written: a
// create cannot change an object someone else made under that name.

// writeHow is how the writer writes an object.
type writeHow int

const (
	// writeApply applies the build server-side (FieldOwner, forced).
	writeApply writeHow = iota
	// writeCreate creates the build once; one that exists is kept.
	writeCreate
	// writeSSHSecret creates the MPI SSH Secret, with a key made when it
	// is written; one that exists is kept.
	writeSSHSecret
	// writeRebuild updates the existing JobSet to the build's spec
	// (jobSetWrites says why not an apply), carrying the resourceVersion it
	// was read at.
	writeRebuild
	// writeSuspend updates the existing object with only spec.suspend set
	// (suspendedCopy), carrying the resourceVersion it was read at.
	writeSuspend
	// writeAdopted updates a JobSet another controller built as far as
	// adoptedJobSetUpdate allows.
	writeAdopted
	// writeBlocked writes nothing: an object of the build's name exists
	// that the TrainJob does not control; the writes stop with err.
	writeBlocked
)

// write is one object the writer writes.
type write struct {
	how writeHow
	// object is the build to apply or create, or the existing object as
	// updated (writeSuspend, writeAdopted).
	object client.Object
	// exists: the observe step found the object, so a refusal is one of an
	// update, else of a create (classifyRefusal).
	exists bool
	err    error
}

// writePlan is what a pass writes of the build, in order: the objects the
// backend's pods use before the backend's object. waiting, when set, says
// why the backend's object is not rebuilt yet (for the log).
type writePlan struct {
	writes  []write
	waiting string
}

// writeInputs are the plain values decideWrites reads.
type writeInputs struct {
	TrainJob *trainerv1alpha1.TrainJob
	// Built holds the build of the TrainJob's backend.
	Built builtObjects
	// JobSet and PodCliqueSet are the backend's object as it exists, nil
	// for none.
	JobSet       *jobsetv1alpha2.JobSet
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	Existing     existingBuild
}

// decideWrites decides what a pass writes of the build: the MPI SSH Secret
// (only before the backend's object runs, the one time it is needed) and
// hostfile; on the JobSet backend the Workload and its missing PodGroups,
// the scheduler's PodGroup (created, then brought to the build while the
// TrainJob or its JobSet is suspended, never under a placed gang) and the
// ComputeDomain (created); then the backend's object, created, or rebuilt
// under the target's rules: a JobSet only while it or the TrainJob is
// suspended (as Kubeflow Trainer; its webhook takes pod template changes
// then), a JobSet another controller built only as adoptedJobSetUpdate
// allows, a Training PodCliqueSet as decideRebuild says. An object of the
// build's name that the TrainJob does not control blocks the rest.
func decideWrites(in writeInputs) writePlan {
	var plan writePlan
	tjSuspended := ptr.Deref(in.TrainJob.Spec.Suspend, false)
	switch {
	case in.Built.jobSet != nil:
		objects := in.Built.jobSet
		notRunning := in.JobSet == nil || ptr.Deref(in.JobSet.Spec.Suspend, false)
		plan.writes = mpiWrites(objects.NeedsMPISSHSecret && notRunning, objects.MPIHostfile, in.Existing.Hostfile)
		if objects.Workload != nil {
			plan.writes = append(plan.writes, podGroupWrites(objects, in.Existing)...)
		}
		if desired := objects.SchedulerPodGroup; desired != nil {
			plan.writes = append(plan.writes, schedulerPodGroupWrites(in.TrainJob, desired, in.Existing.SchedulerPodGroup, tjSuspended || notRunning)...)
		}
		if desired := objects.ComputeDomain; desired != nil {
			plan.writes = append(plan.writes, createOnce(in.TrainJob, desired, in.Existing.ComputeDomain)...)
		}
		plan.writes = append(plan.writes, jobSetWrites(objects.JobSet, in.JobSet, tjSuspended)...)
	case in.Built.podCliqueSet != nil:
		objects := in.Built.podCliqueSet
		notRunning := in.PodCliqueSet == nil || in.PodCliqueSet.IsSuspended()
		plan.writes = mpiWrites(objects.NeedsMPISSHSecret && notRunning, objects.MPIHostfile, in.Existing.Hostfile)
		writes, waiting := podCliqueSetWrites(objects.PodCliqueSet, in.PodCliqueSet, tjSuspended, in.Existing.BeyondSuspend)
		plan.writes, plan.waiting = append(plan.writes, writes...), waiting
	}
	return plan
}

// mpiWrites: the SSH Secret when it is needed, and the hostfile applied
// when it is missing or its data differ, or it lacks copse's labels (one
// Kubeflow Trainer made is adopted so).
func mpiWrites(secret bool, hostfile, existing *corev1.ConfigMap) []write {
	var out []write
	if secret {
		out = append(out, write{how: writeSSHSecret})
	}
	if hostfile != nil && (existing == nil || !maps.Equal(existing.Data, hostfile.Data) ||
		existing.Labels[labels.ManagedByKey] != labels.ManagedByValue) {
		out = append(out, write{how: writeApply, object: hostfile, exists: existing != nil})
	}
	return out
}

// podGroupWrites makes the TrainJob's Workload and PodGroups exist before
// any of its pods: a pod whose PodGroup is missing is not scheduled, and a
// gang whose PodGroup comes late could be placed piecemeal. Both are
// immutable and kept while the TrainJob is suspended (KEP-3015), so they
// are only ever created. The Workload is made only for a PodGroup to be
// made: PodGroups that exist keep the Workload they name (a TrainJob's
// Workload was named after it alone before it was <trainjob>.trainjob). A
// PodGroup built before its Workload exists gets the Workload's UID when
// written (buildWrites).
func podGroupWrites(objects *trainjob.JobSetObjects, existing existingBuild) []write {
	var out []write
	uid := ""
	if existing.Workload != nil {
		uid = string(existing.Workload.UID)
	}
	for _, podGroup := range trainjob.BuildPodGroups(objects.Plan, uid) {
		if !existing.PodGroups[podGroup.Name] {
			out = append(out, write{how: writeCreate, object: podGroup})
		}
	}
	if len(out) > 0 && existing.Workload == nil {
		out = append([]write{{how: writeCreate, object: objects.Workload}}, out...)
	}
	return out
}

// schedulerPodGroupWrites makes the TrainJob's coscheduling or Volcano
// PodGroup exist before the JobSet whose pods are its members, as Kubeflow
// Trainer does: applied when missing, and brought to the build only while
// rebuildable (the TrainJob or its JobSet suspended) and differing, never
// under a placed gang. One the TrainJob does not control is left alone, and
// said so: the pods would join someone else's gang.
func schedulerPodGroupWrites(tj *trainerv1alpha1.TrainJob, desired, existing *unstructured.Unstructured, rebuildable bool) []write {
	switch {
	case existing == nil:
		return []write{{how: writeApply, object: desired}}
	case !metav1.IsControlledBy(existing, tj):
		return []write{blocked(tj, existing)}
	case rebuildable && trainjob.SchedulerPodGroupSpecDiffers(existing, desired):
		return []write{{how: writeApply, object: desired, exists: true}}
	}
	return nil
}

// createOnce creates an immutable object of the build (the ComputeDomain)
// when it does not exist; one the TrainJob does not control is left alone,
// and said so.
func createOnce(tj *trainerv1alpha1.TrainJob, desired, existing *unstructured.Unstructured) []write {
	switch {
	case existing == nil:
		return []write{{how: writeCreate, object: desired}}
	case !metav1.IsControlledBy(existing, tj):
		return []write{blocked(tj, existing)}
	}
	return nil
}

func blocked(tj *trainerv1alpha1.TrainJob, existing client.Object) write {
	kind := existing.GetObjectKind().GroupVersionKind().GroupKind()
	return write{how: writeBlocked, err: fmt.Errorf("%s %s exists but is not controlled by TrainJob %s: copse leaves it alone",
		kind, existing.GetName(), tj.Name)}
}

// jobSetWrites: the JobSet is applied when missing, and rebuilt while it or
// the TrainJob is suspended and its spec differs from the build (a running
// JobSet is never changed under its pods, as Kubeflow Trainer): JobSet's
// webhook then takes pod template changes. The rebuild is an update of the
// spec, not an apply: an apply that removes the last field of a pod
// template's metadata (the label of a runtime patch Kueue cleared) leaves
// it null on the API server, which the JobSet schema refuses
// (kubernetes/kubernetes#117447, still so in v1.37), and the TrainJob would
// keep Kueue's admission for ever. The rebuilt spec keeps what JobSet's
// webhook defaulted at creation (keepCreateDefaults) where the build leaves
// it unset. A JobSet copse did not build is adopted instead.
func jobSetWrites(desired, existing *jobsetv1alpha2.JobSet, tjSuspended bool) []write {
	switch {
	case existing == nil:
		return []write{{how: writeApply, object: desired}}
	case !builtByCopse(existing):
		if updated := adoptedJobSetUpdate(existing, desired, tjSuspended); updated != nil {
			return []write{{how: writeAdopted, object: updated, exists: true}}
		}
		return nil
	case !tjSuspended && !ptr.Deref(existing.Spec.Suspend, false):
		return nil
	}
	spec := *desired.Spec.DeepCopy()
	keepCreateDefaults(*existing.Spec.DeepCopy(), &spec)
	if equality.Semantic.DeepEqual(existing.Spec, spec) {
		return nil
	}
	rebuilt := existing.DeepCopy()
	rebuilt.Spec = spec
	return []write{{how: writeRebuild, object: rebuilt, exists: true}}
}

// podCliqueSetWrites: the PodCliqueSet is applied when missing, else as
// decideRebuild says.
func podCliqueSetWrites(desired, existing *copsev1alpha1.PodCliqueSet, tjSuspended, beyondSuspend bool) ([]write, string) {
	if existing == nil {
		return []write{{how: writeApply, object: desired}}, ""
	}
	switch decideRebuild(rebuildInputs{
		TrainJobSuspended: tjSuspended,
		ExistingSuspended: existing.IsSuspended(),
		TemplatesMutable:  existing.SchedulingDirectivesMutable(),
		BeyondSuspend:     beyondSuspend,
	}) {
	case rebuildAll:
		return []write{{how: writeApply, object: desired, exists: true}}, ""
	case rebuildSuspendFirst:
		suspended, _ := suspendedCopy(existing)
		return []write{{how: writeSuspend, object: suspended, exists: true}}, ""
	case rebuildWaitForPods:
		return nil, "the build changed: rebuilding once the suspended PodCliqueSet's pods are gone"
	}
	return nil, ""
}

// rebuildStep is what a pass does to an existing PodCliqueSet.
type rebuildStep int

const (
	// rebuildNone: it runs, and so does the TrainJob: never changed under
	// its pods.
	rebuildNone rebuildStep = iota
	// rebuildAll: apply the build in one write (a no-op where nothing
	// changed).
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
	TrainJobSuspended bool
	ExistingSuspended bool
	// TemplatesMutable: the object's admission takes pod template changes
	// now (copsev1alpha1.PodCliqueSet.SchedulingDirectivesMutable).
	TemplatesMutable bool
	// BeyondSuspend: applying the build with the object's own spec.suspend
	// would change it; read only where rebuildNeedsDryRun.
	BeyondSuspend bool
}

// decideRebuild picks the step that brings an existing Training
// PodCliqueSet to its build. Only a suspended object, or one of a suspended
// TrainJob, is rebuilt. A change of spec.suspend alone is always taken at
// once; any other change waits until the object accepts it: a running object
// is suspended first (e.g. Kueue stops a TrainJob and clears its runtime
// patch in quick succession), then rebuilt once its pods are gone.
func decideRebuild(in rebuildInputs) rebuildStep {
	switch {
	case !in.TrainJobSuspended && !in.ExistingSuspended:
		return rebuildNone
	case in.TemplatesMutable, !in.BeyondSuspend:
		return rebuildAll
	case !in.ExistingSuspended:
		return rebuildSuspendFirst
	default:
		return rebuildWaitForPods
	}
}

// rebuildNeedsDryRun: decideRebuild turns on BeyondSuspend for this
// PodCliqueSet (it exists, it or the TrainJob is suspended, and its
// templates are not mutable now), so the observe step asks the API server.
func rebuildNeedsDryRun(tjSuspended bool, existing *copsev1alpha1.PodCliqueSet) bool {
	return existing != nil && (tjSuspended || existing.IsSuspended()) && !existing.SchedulingDirectivesMutable()
}
