// Package trainjob holds the TrainJob controller: it freezes the TrainJob's
// runtime into a snapshot, builds the JobSet or, on the PodCliqueSet backend
// the snapshot names, the Training PodCliqueSet (and the MPI Secret and
// hostfile) through internal/trainjob's pipeline, keeps the TrainJob's status
// in step with that object, enforces activeDeadlineSeconds
// and deletes a finished TrainJob once its runtime's TTL has passed. Every
// time it depends on is read from the API server, so a restarted operator
// picks up every deadline and TTL where it was.
package trainjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/trainjob"
)

// ControllerName names the controller in logs, events and metrics.
const ControllerName = "trainjob"

// Reconciler reconciles TrainJobs into JobSets or PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, not the cache: it confirms that
	// a recorded PodCliqueSet is gone before the TrainJob fails for it, and
	// reads what the cache does not hold (it holds only copse's ConfigMaps,
	// and a runtime snapshot Kubeflow Trainer wrote is not one until
	// adopted). Nil reads only the cache.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// WorkloadAPI: the cluster serves scheduling.k8s.io/v1beta1 Workloads
	// and PodGroups, which podGroupPolicy.workload needs.
	WorkloadAPI bool
	// SchedulerPodGroups are the PodGroup kinds of other schedulers
	// (trainjob.CoschedulingPodGroupKind, trainjob.VolcanoPodGroupKind)
	// the cluster served when the operator started: a runtime whose
	// podGroupPolicy.coscheduling or .volcano needs one it does not serve
	// fails its TrainJobs with a stated reason.
	SchedulerPodGroups map[schema.GroupVersionKind]bool
	// MNNVL is the operator configuration's mnnvl.enabled: a TrainJob on
	// the JobSet backend whose pods request GPUs gets a ComputeDomain
	// (trainjob.AddJobSetMNNVL); on the PodCliqueSet backend the
	// PodCliqueSet controller gives it one.
	MNNVL bool
}

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=resource.nvidia.com,resources=computedomains,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update

// Reconcile runs one pass:
//
//	observe  the TrainJob, its runtime (snapshot first; it names the
//	         backend) and its JobSet, or its PodCliqueSet and PodCliques
//	build    the backend's objects through the shared pipeline          (pure)
//	decide   conditions, jobsStatus, deadline, TTL                      (pure)
//	status   written once, before anything is deleted
//	act      create or rebuild the JobSet or PodCliqueSet, or delete it
//	         (deadline), or
//	         delete the finished TrainJob (TTL)
//	settle   a write the API server refused is recorded on the status
//	         (classifyRefusal), and a retried write that went through
//	         clears it
//
// A build that cannot be made still carries a suspension to the backend
// object (suspendWithoutBuild).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tj := &trainerv1alpha1.TrainJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, tj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !managedHere(tj) || tj.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("trainJob", client.ObjectKeyFromObject(tj))
	ctx = log.IntoContext(ctx, logger)

	f := facts{TrainJob: tj, Now: r.Clock.Now()}
	backend := trainerv1alpha1.RuntimeBackendJobSet
	var runtime trainjob.Runtime
	if finished(tj.Status) {
		snapshot, found, err := r.readSnapshot(ctx, tj)
		if err != nil {
			return ctrl.Result{}, err
		}
		if found {
			f.TTL = snapshot.Spec.TTLSecondsAfterFinished
			backend = trainjob.BackendOf(&snapshot.Spec)
		}
	} else {
		var err error
		if runtime, err = r.resolveRuntime(ctx, tj); err != nil {
			r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonRuntimeUnavailable, "Resolve", "%v", err)
			return ctrl.Result{}, r.suspendWithoutBuild(ctx, tj, nil, err)
		}
		f.TTL = runtime.Spec.TTLSecondsAfterFinished
		f.FailurePolicy = runtime.Spec.Template.Spec.FailurePolicy != nil
		backend = trainjob.BackendOf(&runtime.Spec)
	}
	f.Backend = backend
	if err := r.observe(ctx, tj, backend, &f); err != nil {
		return ctrl.Result{}, err
	}
	var built builtObjects
	if !finished(tj.Status) {
		var err error
		if built, err = r.build(tj, runtime, backend, &f); err != nil {
			r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonBuildFailed, "Build", "%v", err)
			return ctrl.Result{}, r.suspendWithoutBuild(ctx, tj, &f, fmt.Errorf("build the %s of TrainJob %s: %w", backend, tj.Name, err))
		}
	}

	d := decide(f)
	if err := r.writeStatus(ctx, tj, d.Status); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case d.Run && built.jobSet != nil:
		return r.settle(ctx, tj, d, r.apply(ctx, tj, built.jobSet, f.JobSet))
	case d.Run && built.podCliqueSet != nil:
		return r.settle(ctx, tj, d, r.applyPodCliqueSet(ctx, tj, built.podCliqueSet, f.PodCliqueSet))
	case d.Run:
		// Nothing could be built (a topology level no binding has): a
		// suspension still reaches an existing object.
		if err := r.suspendWithoutBuild(ctx, tj, &f, nil); err != nil {
			return ctrl.Result{}, err
		}
	case d.DeleteRun:
		if err := r.deleteRun(ctx, tj, f); err != nil {
			return ctrl.Result{}, err
		}
	}
	if d.DeleteTrainJob {
		logger.Info("deleting the finished TrainJob: its ttlSecondsAfterFinished passed", "ttlSecondsAfterFinished", *f.TTL)
		err := r.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground),
			client.Preconditions{UID: &tj.UID})
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete finished TrainJob %s after its TTL: %w", tj.Name, err)
		}
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// settle records how the act step's writes went. A write the API server
// refused becomes the TrainJob's Failed condition (reason BackendRejected)
// or its BackendRefused condition, retried (classifyRefusal); writes that
// went through clear BackendRefused. Any other error is returned, and so
// retried with back-off.
func (r *Reconciler) settle(ctx context.Context, tj *trainerv1alpha1.TrainJob, d decision, actErr error) (ctrl.Result, error) {
	write, isRefusal := asRefusedWrite(actErr)
	if actErr != nil && !isRefusal {
		return ctrl.Result{}, actErr
	}
	status := *tj.Status.DeepCopy()
	if !isRefusal {
		meta.RemoveStatusCondition(&status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
		if err := r.writeStatus(ctx, tj, status); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
	}
	refusal := classifyRefusal(write, ptr.Deref(tj.Spec.Suspend, false))
	log.FromContext(ctx).Info("the API server refused a write of the TrainJob's backend", "terminal", refusal.Terminal,
		"reason", refusal.Reason, "error", write.err.Error())
	recordRefusal(&status, refusal, r.Clock.Now())
	if err := r.writeStatus(ctx, tj, status); err != nil {
		return ctrl.Result{}, err
	}
	if refusal.Terminal {
		// The Failed condition just written brings the TrainJob back for
		// its TTL.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: sooner(d.RequeueAfter, refusal.Retry)}, nil
}

// suspendWithoutBuild carries a suspended TrainJob's suspension to its
// backend object when the build cannot be made (cause says why; nil when
// nothing was built for a stated reason): it sets only spec.suspend on the
// existing JobSet or PodCliqueSet, so that its pods go and a queue gets its
// quota back even while the rest of the TrainJob cannot be rebuilt. f holds
// the observed objects, nil when the backend is not known yet (both kinds
// are read). cause is returned, joined with any error of the update.
func (r *Reconciler) suspendWithoutBuild(ctx context.Context, tj *trainerv1alpha1.TrainJob, f *facts, cause error) error {
	if !ptr.Deref(tj.Spec.Suspend, false) || finished(tj.Status) {
		return cause
	}
	var objects []client.Object
	if f != nil {
		if f.JobSet != nil {
			objects = append(objects, f.JobSet)
		}
		if f.PodCliqueSet != nil {
			objects = append(objects, f.PodCliqueSet)
		}
	} else {
		jobSet, jobSetErr := r.getJobSet(ctx, tj)
		pcs, pcsErr := r.getPodCliqueSet(ctx, tj)
		if jobSet != nil {
			objects = append(objects, jobSet)
		}
		if pcs != nil {
			objects = append(objects, pcs)
		}
		if jobSetErr != nil || pcsErr != nil {
			cause = errors.Join(cause, jobSetErr, pcsErr)
		}
	}
	for _, obj := range objects {
		updated, changed := suspendedCopy(obj)
		if !changed {
			continue
		}
		if err := r.Client.Update(ctx, updated); err != nil {
			return errors.Join(cause, fmt.Errorf("suspend %s %s without its build: %w", kindOf(obj), obj.GetName(), err))
		}
		why := "the build could not be made"
		if cause != nil {
			why += ": " + cause.Error()
		}
		r.Recorder.Eventf(tj, updated, corev1.EventTypeWarning, reasonSuspendedOnly, "Suspend",
			"%s %s suspended (only spec.suspend set): %s", kindOf(obj), obj.GetName(), why)
	}
	return cause
}

// suspendedCopy is a copy of a JobSet or PodCliqueSet with spec.suspend
// true; changed is false when it was suspended already.
func suspendedCopy(obj client.Object) (client.Object, bool) {
	switch o := obj.(type) {
	case *jobsetv1alpha2.JobSet:
		if ptr.Deref(o.Spec.Suspend, false) {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	case *copsev1alpha1.PodCliqueSet:
		if o.IsSuspended() {
			return nil, false
		}
		updated := o.DeepCopy()
		updated.Spec.Suspend = ptr.To(true)
		return updated, true
	}
	return nil, false
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*copsev1alpha1.PodCliqueSet); ok {
		return "PodCliqueSet"
	}
	return "JobSet"
}

// managedHere: copse reconciles TrainJobs managed by the TrainJob controller
// (the default); MultiKueue's are run on a worker cluster.
func managedHere(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) == trainerv1alpha1.ManagedByTrainJobController
}

// builtObjects are what one backend builds; exactly one is set once the
// build succeeded.
type builtObjects struct {
	jobSet       *trainjob.JobSetObjects
	podCliqueSet *trainjob.PodCliqueSetObjects
}

// build runs the backend's pipeline. A runtime the backend cannot run is a
// fact (Unsupported: the TrainJob fails), not an error; so is a topology
// level no ClusterTopologyBinding has (TopologyUnresolved: nothing is built
// until one has it). On the PodCliqueSet backend the packing is resolved
// against the bindings only until the PodCliqueSet exists; from then on its
// own topologyConstraint is kept (trainjob.KeepTopology), so the
// bindings never block a rebuild, a suspension or a resume.
func (r *Reconciler) build(tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime,
	backend trainerv1alpha1.RuntimeBackend, f *facts) (builtObjects, error) {
	var plan *trainjob.Plan
	var err error
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		plan, err = trainjob.PlanPodCliqueSet(tj, runtime, f.Topology)
	} else {
		plan, err = trainjob.PlanJobSet(tj, runtime)
	}
	switch {
	case trainjob.IsUnsupported(err):
		f.Unsupported = err.Error()
		return builtObjects{}, nil
	case trainjob.IsTopologyUnresolved(err):
		f.TopologyUnresolved = err.Error()
		return builtObjects{}, nil
	case err != nil:
		return builtObjects{}, err
	}
	f.NumNodes = ptr.To(trainjob.TrainerNodes(plan))
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		return builtObjects{podCliqueSet: trainjob.PodCliqueSetObjectsOf(plan)}, nil
	}
	if len(plan.PodGroups) > 0 && !r.WorkloadAPI {
		f.NumNodes = nil
		f.Unsupported = "podGroupPolicy.workload needs the scheduling.k8s.io/v1beta1 Workload API, which this cluster does not serve"
		return builtObjects{}, nil
	}
	if policy, ok := trainjob.SchedulerPodGroupPolicyOf(plan.PodGroupPolicy); ok && !r.SchedulerPodGroups[policy.Kind] {
		f.NumNodes = nil
		f.Unsupported = fmt.Sprintf("%s needs the %s %s, which this cluster does not serve: install its CRD, then restart copse "+
			"(it looks for the kind when it starts)", policy.Field, policy.Kind.Kind, policy.Kind.GroupVersion())
		return builtObjects{}, nil
	}
	objects, err := trainjob.JobSetObjectsOf(plan)
	if err != nil {
		return builtObjects{}, err
	}
	if r.MNNVL {
		trainjob.AddJobSetMNNVL(objects, tj)
	}
	return builtObjects{jobSet: objects}, nil
}

// observe reads the backend's object: the JobSet, or the PodCliqueSet, its
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
func (r *Reconciler) observe(ctx context.Context, tj *trainerv1alpha1.TrainJob, backend trainerv1alpha1.RuntimeBackend, f *facts) error {
	if backend != trainerv1alpha1.RuntimeBackendPodCliqueSet {
		jobSet, err := r.getJobSet(ctx, tj)
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
	pclqs := &copsev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, pclqs, client.InNamespace(tj.Namespace), client.MatchingLabels{labels.PartOfKey: pcs.Name}); err != nil {
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

// deleteRun deletes the backend's object once the deadline passed (the
// Failed condition is already written).
func (r *Reconciler) deleteRun(ctx context.Context, tj *trainerv1alpha1.TrainJob, f facts) error {
	var obj client.Object = f.JobSet
	kind := "JobSet"
	if f.PodCliqueSet != nil {
		obj, kind = f.PodCliqueSet, "PodCliqueSet"
	}
	err := r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: ptr.To(obj.GetUID())})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, obj.GetName(), err)
	}
	r.Recorder.Eventf(tj, obj, corev1.EventTypeWarning, trainerv1alpha1.TrainJobDeadlineExceededReason, "Delete",
		"activeDeadlineSeconds %d passed: %s %s deleted", tj.Spec.ActiveDeadlineSeconds, kind, obj.GetName())
	return nil
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

// writeStatus writes the decided status when it differs, with an optimistic
// lock: a pass that read a stale TrainJob fails and is retried.
func (r *Reconciler) writeStatus(ctx context.Context, tj *trainerv1alpha1.TrainJob, status trainerv1alpha1.TrainJobStatus) error {
	if apiequality.Semantic.DeepEqual(tj.Status, status) {
		return nil
	}
	before := tj.Status
	tj.Status = status
	if err := r.Client.Status().Update(ctx, tj); err != nil {
		tj.Status = before
		return fmt.Errorf("write status of TrainJob %s: %w", tj.Name, err)
	}
	r.recordTransitions(tj, before, status)
	return nil
}
