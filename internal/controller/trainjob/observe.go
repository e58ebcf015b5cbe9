package trainjob

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The observe step: everything a pass decides on is read here, before any
// decision, and nothing is read after. observe reads the runtime
// (observeRuntime), the backend's object (observeBackend; on the
// PodCliqueSet backend also its PodCliques and pods), builds the backend's
// objects (pure) and reads what exists of them (observeBuilt).

// observe reads everything the pass decides on into its facts. A runtime
// that cannot be resolved, or a build that cannot be made, is a fact
// (ResolveErr, BuildErr): the pass still carries a suspension to the
// backend's object. Any other failed read is returned: nothing is written.
func (r *Reconciler) observe(ctx context.Context, tj *trainerv1alpha1.TrainJob) (facts, error) {
	f := facts{TrainJob: tj, Now: r.Clock.Now(), Backend: trainerv1alpha1.RuntimeBackendJobSet}
	runtime, err := r.observeRuntime(ctx, &f)
	if err != nil {
		f.ResolveErr = errors.Join(err, r.observeSuspendTargets(ctx, &f))
		return f, nil
	}
	if err := r.observeBackend(ctx, &f); err != nil {
		return f, err
	}
	if f.Built, err = r.build(tj, runtime, &f); err != nil {
		f.BuildErr = fmt.Errorf("build the %s of TrainJob %s: %w", f.Backend, tj.Name, err)
		return f, nil
	}
	f.Existing, err = r.observeBuilt(ctx, f)
	return f, err
}

// observeBackend reads the backend's object: the JobSet (from the API server when
// the cache has none), or the PodCliqueSet, its
// PodCliques and how many of its pods have not ended. A PodCliqueSet's
// status changes as its pods go away (its Suspended condition counts them),
// which brings the TrainJob back: pods need no watch of their own.
//
// An object of the TrainJob's name that it does not control is a fact
// (NotControlled), as is, on the PodCliqueSet backend, a recorded
// PodCliqueSet that is gone (BackendDeleted): the cache may simply not have
// it yet, so its absence is confirmed with a read from the API server.
// The PodCliqueSet backend's packing comes from here: the existing
// PodCliqueSet's, else the ClusterTopologyBindings to resolve against.
func (r *Reconciler) observeBackend(ctx context.Context, f *facts) error {
	tj := f.TrainJob
	if f.Backend != trainerv1alpha1.RuntimeBackendPodCliqueSet {
		jobSet, err := r.getJobSet(ctx, tj)
		if err == nil && jobSet == nil && !finished(tj.Status) {
			jobSet, err = r.getJobSetFromServer(ctx, tj)
		}
		if notControlled, ok := asNotControlled(err); ok {
			f.NotControlled = notControlled.Error()
			return nil
		}
		f.JobSet = jobSet
		return err
	}
	pcs, err := r.getPodCliqueSet(ctx, tj)
	notControlled, foreign := asNotControlled(err)
	if err != nil && !foreign {
		return err
	}
	if !finished(tj.Status) && recordedPodCliqueSet(tj) != nil {
		deleted, live, err := r.checkRecordedPodCliqueSet(ctx, tj, pcs)
		if err != nil || deleted != "" {
			f.BackendDeleted = deleted
			return err
		}
		pcs, foreign = live, false
	}
	if foreign {
		f.NotControlled = notControlled.Error()
		return nil
	}
	if pcs == nil {
		if finished(tj.Status) {
			return nil
		}
		bindings := &copsev1alpha1.ClusterTopologyBindingList{}
		if err := r.Client.List(ctx, bindings); err != nil {
			return fmt.Errorf("list ClusterTopologyBindings: %w", err)
		}
		f.Topology = trainjob.ResolveTopologyAgainst(bindings.Items)
		return nil
	}
	f.PodCliqueSet = pcs
	f.Topology = trainjob.KeepTopology(pcs.Spec.Template.TopologyConstraint)
	// The pass that records the PodCliqueSet's end writes the TrainJob's
	// outcome and its jobsStatus once, for good: they are read from the
	// PodCliques the API server has, which the PodCliqueSet's phase was
	// decided from, not from a cache that may not have their last status yet
	// (a Complete TrainJob whose jobsStatus counts no succeeded job).
	reader := client.Reader(r.Client)
	if pcs.Status.Phase.IsTerminal() && !finished(tj.Status) && r.APIReader != nil {
		reader = r.APIReader
	}
	pclqs := &copsev1alpha1.PodCliqueList{}
	if err := reader.List(ctx, pclqs, client.InNamespace(tj.Namespace), client.MatchingLabels{labels.PartOfKey: pcs.Name}); err != nil {
		return fmt.Errorf("list the PodCliques of PodCliqueSet %s: %w", pcs.Name, err)
	}
	for _, pclq := range pclqs.Items {
		if metav1.IsControlledBy(&pclq, pcs) {
			f.PodCliques = append(f.PodCliques, pclq)
		}
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(tj.Namespace), client.MatchingLabels(labels.ForPodCliqueSet(pcs.Name))); err != nil {
		return fmt.Errorf("list the pods of PodCliqueSet %s: %w", pcs.Name, err)
	}
	f.PodsNotEnded = podsNotEnded(pods.Items)
	return nil
}

// recordedPodCliqueSet is the PodCliqueSet status.backend records, nil when
// it records none.
func recordedPodCliqueSet(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.BackendStatus {
	if b := tj.Status.Backend; b != nil && b.Kind == "PodCliqueSet" {
		return b
	}
	return nil
}

// checkRecordedPodCliqueSet tells whether the PodCliqueSet the TrainJob
// recorded still runs it. cached is the cache's (nil when the cache has
// none the TrainJob controls). deleted says why it does not, "" when it
// does; live is then the PodCliqueSet, read from the API server when the
// cache did not have it. It is gone when the API server has no PodCliqueSet
// of that name controlled by the TrainJob with the recorded UID, or has it
// being deleted.
func (r *Reconciler) checkRecordedPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob, cached *copsev1alpha1.PodCliqueSet) (deleted string, live *copsev1alpha1.PodCliqueSet, err error) {
	record := recordedPodCliqueSet(tj)
	live = cached
	if live == nil {
		live = &copsev1alpha1.PodCliqueSet{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(tj), live)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return "", nil, fmt.Errorf("read PodCliqueSet %s from the API server: %w", tj.Name, err)
		case !metav1.IsControlledBy(live, tj):
			live = nil
		}
	}
	switch {
	case live == nil:
		return backendDeletedMessage(record.Name, "was deleted"), nil, nil
	case record.UID != "" && live.UID != record.UID:
		return backendDeletedMessage(record.Name, fmt.Sprintf("was deleted (PodCliqueSet %s now has uid %s, not the recorded %s)", live.Name, live.UID, record.UID)), nil, nil
	case live.DeletionTimestamp != nil:
		return backendDeletedMessage(record.Name, "is being deleted"), nil, nil
	}
	return "", live, nil
}

// backendDeletedMessage is the Failed condition's message for a
// PodCliqueSet deleted from outside.
func backendDeletedMessage(name, what string) string {
	return fmt.Sprintf("PodCliqueSet %s %s before the TrainJob finished. It held the run's state (its restart count and the pods "+
		"that had exited 0), so copse does not create it again: a new one would reset the restart budget and run finished work again", name, what)
}

// podsNotEnded counts, per clique template, the pods that have not ended
// (terminating ones included), of every attempt.
func podsNotEnded(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for i := range pods {
		if podstate.Of(&pods[i]).HoldsNode() {
			out[pods[i].Labels[labels.CliqueTemplateKey]]++
		}
	}
	return out
}

func (r *Reconciler) getPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*copsev1alpha1.PodCliqueSet, error) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	if found, err := r.getControlled(ctx, tj, "PodCliqueSet", pcs); !found {
		return nil, err
	}
	return pcs, nil
}

func (r *Reconciler) getJobSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	jobSet := &jobsetv1alpha2.JobSet{}
	if found, err := r.getControlled(ctx, tj, "JobSet", jobSet); !found {
		return nil, err
	}
	return jobSet, nil
}

// getJobSetFromServer reads the TrainJob's JobSet from the API server: the
// cache may not have caught up with the one this controller just created,
// and the build is applied as a creation only when there is none (an apply
// onto an existing JobSet without the defaults its webhook set at creation
// would be refused). Nil reads nothing.
func (r *Reconciler) getJobSetFromServer(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	jobSet := &jobsetv1alpha2.JobSet{}
	switch err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(tj), jobSet); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the JobSet of TrainJob %s from the API server: %w", tj.Name, err)
	case !metav1.IsControlledBy(jobSet, tj):
		return nil, &notControlledError{kind: "JobSet", name: jobSet.Name, trainJob: tj.Name}
	}
	return jobSet, nil
}

// getControlled reads the TrainJob's namesake of a kind into obj; found is
// false when there is none. One the TrainJob does not control is a
// *notControlledError: copse leaves it alone.
func (r *Reconciler) getControlled(ctx context.Context, tj *trainerv1alpha1.TrainJob, kind string, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get the %s of TrainJob %s: %w", kind, tj.Name, err)
	case !metav1.IsControlledBy(obj, tj):
		return false, &notControlledError{kind: kind, name: obj.GetName(), trainJob: tj.Name}
	}
	return true, nil
}

// notControlledError: an object of the TrainJob's name exists that the
// TrainJob does not control.
type notControlledError struct {
	kind, name, trainJob string
}

func (e *notControlledError) Error() string {
	return fmt.Sprintf("%s %s exists but is not controlled by TrainJob %s: copse leaves it alone, and creates the TrainJob's own "+
		"once it is gone", e.kind, e.name, e.trainJob)
}

func asNotControlled(err error) (*notControlledError, bool) {
	var notControlled *notControlledError
	return notControlled, errors.As(err, &notControlled)
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

// observeSuspendTargets reads what a pass that cannot resolve its runtime (and so
// does not know its backend) reads to suspend: both kinds, when the
// TrainJob is suspended and has not finished.
func (r *Reconciler) observeSuspendTargets(ctx context.Context, f *facts) error {
	tj := f.TrainJob
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return nil
	}
	jobSet, jobSetErr := r.getJobSet(ctx, tj)
	pcs, pcsErr := r.getPodCliqueSet(ctx, tj)
	f.JobSet, f.PodCliqueSet = jobSet, pcs
	return errors.Join(jobSetErr, pcsErr)
}

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
