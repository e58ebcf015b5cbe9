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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	Client   client.Client
	Recorder events.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// WorkloadAPI: the cluster serves scheduling.k8s.io/v1beta1 Workloads
	// and PodGroups, which podGroupPolicy.workload needs.
	WorkloadAPI bool
	// MNNVL is the operator configuration's mnnvl.enabled: a TrainJob on
	// the JobSet backend whose pods request GPUs gets a ComputeDomain
	// (trainjob.AddJobSetMNNVL); on the PodCliqueSet backend the
	// PodCliqueSet controller gives it one.
	MNNVL bool
	// APIReader reads from the API server what the cache does not hold: the
	// cache holds only copse's ConfigMaps, and a runtime snapshot Kubeflow
	// Trainer wrote is not one until adopted. Nil reads only the cache.
	APIReader client.Reader
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
	var built builtObjects
	if finished(tj.Status) {
		runtime, found, err := r.readSnapshot(ctx, tj)
		if err != nil {
			return ctrl.Result{}, err
		}
		if found {
			f.TTL = runtime.Spec.TTLSecondsAfterFinished
			backend = trainjob.BackendOf(&runtime.Spec)
		}
	} else {
		runtime, err := r.resolveRuntime(ctx, tj)
		if err != nil {
			r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonRuntimeUnavailable, "Resolve", "%v", err)
			return ctrl.Result{}, err
		}
		f.TTL = runtime.Spec.TTLSecondsAfterFinished
		backend = trainjob.BackendOf(&runtime.Spec)
		if built, err = r.build(ctx, tj, runtime, backend, &f); err != nil {
			r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, reasonBuildFailed, "Build", "%v", err)
			return ctrl.Result{}, fmt.Errorf("build the %s of TrainJob %s: %w", backend, tj.Name, err)
		}
	}
	if err := r.observe(ctx, tj, backend, &f); err != nil {
		return ctrl.Result{}, err
	}

	d := decide(f)
	if err := r.writeStatus(ctx, tj, d.Status); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case d.Run && built.jobSet != nil:
		if err := r.apply(ctx, tj, built.jobSet, f.JobSet); err != nil {
			return ctrl.Result{}, err
		}
	case d.Run && built.podCliqueSet != nil:
		if err := r.applyPodCliqueSet(ctx, tj, built.podCliqueSet, f.PodCliqueSet); err != nil {
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
// until one has it).
func (r *Reconciler) build(ctx context.Context, tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime,
	backend trainerv1alpha1.RuntimeBackend, f *facts) (builtObjects, error) {
	var plan *trainjob.Plan
	var err error
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		bindings := &copsev1alpha1.ClusterTopologyBindingList{}
		if err := r.Client.List(ctx, bindings); err != nil {
			return builtObjects{}, fmt.Errorf("list ClusterTopologyBindings: %w", err)
		}
		plan, err = trainjob.PlanPodCliqueSet(tj, runtime, bindings.Items)
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
	objects := trainjob.JobSetObjectsOf(plan)
	if r.MNNVL {
		trainjob.AddJobSetMNNVL(objects, tj)
	}
	return builtObjects{jobSet: objects}, nil
}

// observe reads the backend's object: the JobSet, or the PodCliqueSet, its
// PodCliques and how many of its pods have not ended. A PodCliqueSet's
// status changes as its pods go away (its Suspended condition counts them),
// which brings the TrainJob back: pods need no watch of their own.
func (r *Reconciler) observe(ctx context.Context, tj *trainerv1alpha1.TrainJob, backend trainerv1alpha1.RuntimeBackend, f *facts) error {
	if backend != trainerv1alpha1.RuntimeBackendPodCliqueSet {
		jobSet, err := r.getJobSet(ctx, tj)
		f.JobSet = jobSet
		return err
	}
	pcs, err := r.getPodCliqueSet(ctx, tj)
	if err != nil || pcs == nil {
		return err
	}
	f.PodCliqueSet = pcs
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
// false when there is none. One the TrainJob does not control is an error:
// copse leaves it alone.
func (r *Reconciler) getControlled(ctx context.Context, tj *trainerv1alpha1.TrainJob, kind string, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get the %s of TrainJob %s: %w", kind, tj.Name, err)
	case !metav1.IsControlledBy(obj, tj):
		return false, fmt.Errorf("%s %s exists but is not controlled by TrainJob %s: copse leaves it alone", kind, obj.GetName(), tj.Name)
	}
	return true, nil
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
