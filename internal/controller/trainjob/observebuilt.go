package trainjob

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/trainjob"
)

// existingBuild is what exists of the objects a build makes besides the
// backend's object (facts.JobSet, facts.PodCliqueSet): decideWrites reads
// these plain facts, gathered before anything is decided.
type existingBuild struct {
	// Hostfile is the MPI hostfile ConfigMap, nil when there is none.
	Hostfile *corev1.ConfigMap
	// PodGroups holds the names of the TrainJob's Workload-API PodGroups
	// that exist; Workload is its Workload, nil when it has none.
	PodGroups map[string]bool
	Workload  *schedulingv1beta1.Workload
	// SchedulerPodGroup and ComputeDomain are the TrainJob's coscheduling
	// or Volcano PodGroup and its ComputeDomain, nil when there is none.
	SchedulerPodGroup *unstructured.Unstructured
	ComputeDomain     *unstructured.Unstructured
	// BeyondSuspend: applying the PodCliqueSet's build would change more
	// than its spec.suspend (beyondSuspend asks the API server). It is read
	// only where the rebuild rule needs it (rebuildNeedsDryRun).
	BeyondSuspend bool
}

// observeBuilt reads what exists of the objects built: the hostfile (from
// the cache, else the API server, where Kubeflow Trainer's is found), the
// Workload and PodGroups, the scheduler's PodGroup and the ComputeDomain of
// the JobSet backend; on the PodCliqueSet backend, whether the build would
// change the existing PodCliqueSet beyond its suspension, where the rebuild
// rule turns on it.
func (r *Reconciler) observeBuilt(ctx context.Context, f facts) (existingBuild, error) {
	tj, built := f.TrainJob, f.Built
	var out existingBuild
	var hostfile *corev1.ConfigMap
	var err error
	switch {
	case built.jobSet != nil:
		objects := built.jobSet
		hostfile = objects.MPIHostfile
		if objects.Workload != nil {
			if out.Workload, out.PodGroups, err = r.observePodGroups(ctx, objects); err != nil {
				return out, err
			}
		}
		if desired := objects.SchedulerPodGroup; desired != nil {
			if out.SchedulerPodGroup, err = r.getUnstructured(ctx, desired, trainjob.NewSchedulerPodGroup(desired.GroupVersionKind())); err != nil {
				return out, err
			}
		}
		if desired := objects.ComputeDomain; desired != nil {
			if out.ComputeDomain, err = r.getUnstructured(ctx, desired, mnnvl.NewComputeDomain()); err != nil {
				return out, err
			}
		}
	case built.podCliqueSet != nil:
		hostfile = built.podCliqueSet.MPIHostfile
		if existing := f.PodCliqueSet; rebuildNeedsDryRun(ptr.Deref(tj.Spec.Suspend, false), existing) {
			if out.BeyondSuspend, err = r.beyondSuspend(ctx, built.podCliqueSet.PodCliqueSet, existing); err != nil {
				return out, err
			}
		}
	}
	if hostfile != nil {
		cm, found, err := r.getConfigMap(ctx, client.ObjectKeyFromObject(hostfile))
		if err != nil {
			return out, err
		}
		if found {
			out.Hostfile = cm
		}
	}
	return out, nil
}

// observePodGroups reads the TrainJob's Workload and which of its PodGroups
// exist.
func (r *Reconciler) observePodGroups(ctx context.Context, objects *trainjob.JobSetObjects) (*schedulingv1beta1.Workload, map[string]bool, error) {
	exist := map[string]bool{}
	for _, podGroup := range trainjob.BuildPodGroups(objects.Plan, "") {
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(podGroup), &schedulingv1beta1.PodGroup{})
		switch {
		case err == nil:
			exist[podGroup.Name] = true
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("get PodGroup %s: %w", podGroup.Name, err)
		}
	}
	workload := &schedulingv1beta1.Workload{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(objects.Workload), workload); {
	case apierrors.IsNotFound(err):
		return nil, exist, nil
	case err != nil:
		return nil, nil, fmt.Errorf("get Workload %s: %w", objects.Workload.Name, err)
	}
	return workload, exist, nil
}

// getUnstructured reads the object of desired's name into into; nil when
// there is none.
func (r *Reconciler) getUnstructured(ctx context.Context, desired, into *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), into); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s %s: %w", desired.GetKind(), desired.GetName(), err)
	}
	return into, nil
}

// beyondSuspend asks the API server whether applying the PodCliqueSet's
// build would change more than its spec.suspend: the build, with the
// existing object's spec.suspend, is applied as a dry run. It would when the
// result's spec, labels or annotations differ from the existing object's,
// or when the dry run is refused (the PodCliqueSet's admission keeps the
// templates of a run in progress). The API server merges and defaults as it
// would for the real write, so copse keeps no record of its last build.
func (r *Reconciler) beyondSuspend(ctx context.Context, desired, existing *copsev1alpha1.PodCliqueSet) (bool, error) {
	probe := desired.DeepCopy()
	probe.Spec.Suspend = ptr.To(existing.IsSuspended())
	config, err := applyConfiguration(probe)
	if err != nil {
		return false, err
	}
	err = r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(config), client.FieldOwner(FieldOwner), client.ForceOwnership, client.DryRunAll)
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("dry-run the build of PodCliqueSet %s: %w", existing.Name, err)
	}
	result := &copsev1alpha1.PodCliqueSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(config.Object, result); err != nil {
		return false, fmt.Errorf("read the dry run of PodCliqueSet %s: %w", existing.Name, err)
	}
	return !apiequality.Semantic.DeepEqual(result.Spec, existing.Spec) ||
		!maps.Equal(result.Labels, existing.Labels) || !maps.Equal(result.Annotations, existing.Annotations), nil
}
