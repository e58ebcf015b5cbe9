package trainjob

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
)

// What copse does with the objects Kubeflow Trainer left behind when a
// cluster moves from Trainer to copse: its runtime snapshot is adopted
// (observe.go, readSnapshot) and its JobSet is taken over as it is.

// adoptionFieldOwner is the field manager of copse's updates of a JobSet
// it adopted.
const adoptionFieldOwner = "copse-trainjob-adoption"

// Event reasons of the adoption.
const (
	reasonRuntimeSnapshotAdopted = "RuntimeSnapshotAdopted"
	reasonAdoptedJobSetUpdated   = "AdoptedJobSetUpdated"
)

// legacyBuildHashAnnotation is the hash of its build that copse stamped on
// the JobSets it built before it applied them server-side: such a JobSet is
// copse's too.
const legacyBuildHashAnnotation = "copse.dev/trainjob-build-hash"

// builtByCopse reports whether copse built a backend object: copse's field
// owner applied it (managedFields), or it carries the stamp of a build of an
// earlier copse. A JobSet with neither was built by someone else (Kubeflow
// Trainer) and is adopted.
func builtByCopse(obj client.Object) bool {
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager == FieldOwner && entry.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	_, ok := obj.GetAnnotations()[legacyBuildHashAnnotation]
	return ok
}

// adoptedJobSetUpdate is what copse changes of a JobSet it did not build,
// nil for nothing. Its build is unknown, so nothing about it can count as a
// build change, and its pod templates may differ from copse's build in
// ways that do not matter (Kubeflow's environment order is random for some
// ML policies) but that JobSet refuses to change. So a running JobSet of a
// running TrainJob is never touched, as a copse-built one; otherwise
// (suspending, suspended, resuming) only what the TrainJob's suspension
// and Kueue's admission change and JobSet lets change is taken from the
// build: spec.suspend, the JobSet's labels and annotations, and per
// replicated job (by name) its pod template's labels, annotations,
// nodeSelector, tolerations and scheduling gates. The JobSet stays
// unstamped: it is adopted for the rest of its life.
func adoptedJobSetUpdate(existing, desired *jobsetv1alpha2.JobSet, trainJobSuspended bool) *jobsetv1alpha2.JobSet {
	if !trainJobSuspended && !ptr.Deref(existing.Spec.Suspend, false) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Spec.Suspend = ptr.To(ptr.Deref(desired.Spec.Suspend, false))
	updated.Labels = maps.Clone(desired.Labels)
	updated.Annotations = maps.Clone(desired.Annotations)
	built := map[string]*jobsetv1alpha2.ReplicatedJob{}
	for i := range desired.Spec.ReplicatedJobs {
		built[desired.Spec.ReplicatedJobs[i].Name] = &desired.Spec.ReplicatedJobs[i]
	}
	for i := range updated.Spec.ReplicatedJobs {
		from, ok := built[updated.Spec.ReplicatedJobs[i].Name]
		if !ok {
			continue
		}
		pod, builtPod := &updated.Spec.ReplicatedJobs[i].Template.Spec.Template, from.Template.Spec.Template.DeepCopy()
		pod.Labels, pod.Annotations = builtPod.Labels, builtPod.Annotations
		pod.Spec.NodeSelector, pod.Spec.Tolerations, pod.Spec.SchedulingGates =
			builtPod.Spec.NodeSelector, builtPod.Spec.Tolerations, builtPod.Spec.SchedulingGates
	}
	if apiequality.Semantic.DeepEqual(updated.Spec, existing.Spec) &&
		apiequality.Semantic.DeepEqual(updated.Labels, existing.Labels) &&
		apiequality.Semantic.DeepEqual(updated.Annotations, existing.Annotations) {
		return nil
	}
	return updated
}

// updateAdoptedJobSet writes what adoptedJobSetUpdate takes of the build
// to a JobSet copse did not build: an update carrying the resourceVersion
// it was read at, not an apply, as the build of the rest of it is unknown
// (an apply would own, and later remove, fields Kubeflow Trainer set), and
// under another field manager than the builds copse applies, so that the
// JobSet stays adopted (builtByCopse).
func updateAdoptedJobSet(ctx context.Context, w children.Writer, tj *trainerv1alpha1.TrainJob, obj client.Object) error {
	updated, ok := obj.(*jobsetv1alpha2.JobSet)
	if !ok {
		return fmt.Errorf("update adopted JobSet: %T is no JobSet", obj)
	}
	if err := w.Client.Update(ctx, updated, client.FieldOwner(adoptionFieldOwner)); err != nil {
		return fmt.Errorf("update adopted JobSet %s: %w", updated.Name, err)
	}
	w.Recorder.Eventf(tj, updated, corev1.EventTypeNormal, reasonAdoptedJobSetUpdated, "Update",
		"JobSet %s, built by another controller (Kubeflow Trainer), updated: suspend %t and its pods' scheduling directives; its other fields are kept as built",
		updated.Name, ptr.Deref(updated.Spec.Suspend, false))
	return nil
}
