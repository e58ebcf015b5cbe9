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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
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
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=resource.nvidia.com,resources=computedomains,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update;patch

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
	runtime, err := r.resolveBackend(ctx, tj, &f)
	if err != nil {
		if !finished(tj.Status) {
			r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonRuntimeUnavailable, "Resolve", "%v", err)
		}
		return ctrl.Result{}, r.suspendWithoutBuild(ctx, tj, nil, err)
	}
	if err := r.observe(ctx, tj, f.Backend, &f); err != nil {
		return ctrl.Result{}, err
	}
	built, err := r.build(tj, runtime, f.Backend, &f)
	if err != nil {
		r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonBuildFailed, "Build", "%v", err)
		return ctrl.Result{}, r.suspendWithoutBuild(ctx, tj, &f, fmt.Errorf("build the %s of TrainJob %s: %w", f.Backend, tj.Name, err))
	}
	existing, err := r.observeBuilt(ctx, tj, built, f)
	if err != nil {
		return ctrl.Result{}, err
	}

	d := decide(f)
	plan := decideWrites(writeInputs{TrainJob: tj, Built: built, JobSet: f.JobSet, PodCliqueSet: f.PodCliqueSet, Existing: existing})
	if err := r.writeStatus(ctx, tj, d.Status); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case d.Run && (built.jobSet != nil || built.podCliqueSet != nil):
		return r.settle(ctx, tj, d, r.act(ctx, tj, plan))
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
		return ctrl.Result{}, r.deleteFinished(ctx, tj, *f.TTL)
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// resolveBackend reads what the TrainJob runs on: the runtime (its snapshot
// first; resolveRuntime), whose backend, TTL and failure policy go into f.
// A finished TrainJob only needs the snapshot's TTL and backend, and has no
// runtime to build from.
func (r *Reconciler) resolveBackend(ctx context.Context, tj *trainerv1alpha1.TrainJob, f *facts) (trainjob.Runtime, error) {
	f.Backend = trainerv1alpha1.RuntimeBackendJobSet
	if finished(tj.Status) {
		snapshot, found, err := r.readSnapshot(ctx, tj)
		if found {
			f.TTL = snapshot.Spec.TTLSecondsAfterFinished
			f.Backend = trainjob.BackendOf(&snapshot.Spec)
		}
		return trainjob.Runtime{}, err
	}
	runtime, err := r.resolveRuntime(ctx, tj)
	if err != nil {
		return runtime, err
	}
	f.TTL = runtime.Spec.TTLSecondsAfterFinished
	f.FailurePolicy = runtime.Spec.Template.Spec.FailurePolicy != nil
	f.Backend = trainjob.BackendOf(&runtime.Spec)
	return runtime, nil
}

// deleteFinished deletes a finished TrainJob whose TTL has passed.
func (r *Reconciler) deleteFinished(ctx context.Context, tj *trainerv1alpha1.TrainJob, ttl int32) error {
	log.FromContext(ctx).Info("deleting the finished TrainJob: its ttlSecondsAfterFinished passed", "ttlSecondsAfterFinished", ttl)
	err := r.Client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &tj.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete finished TrainJob %s after its TTL: %w", tj.Name, err)
	}
	return nil
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

// managedHere: copse reconciles TrainJobs managed by the TrainJob controller
// (the default); MultiKueue's are run on a worker cluster.
func managedHere(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) == trainerv1alpha1.ManagedByTrainJobController
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
