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

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
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
//	observe  the TrainJob's runtime (snapshot first; it names the
//	         backend), its JobSet, or its PodCliqueSet and PodCliques;
//	         the build (pure) and what exists of its objects
//	plan     status (conditions, jobsStatus, deadline, TTL), events, the
//	         runtime's and the build's writes, the deadline's and the
//	         TTL's deletions                                            (pure)
//	execute  one writer (children.Writer.Execute): the status first,
//	         before anything is deleted, then the rest in order
//	settle   a write the API server refused is recorded on the status
//	         (classifyRefusal), and a retried write that went through
//	         clears it
//
// A build that cannot be made still carries a suspension to the backend
// object (suspendOnly).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tj := &trainerv1alpha1.TrainJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, tj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !managedHere(tj) || tj.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("trainJob", client.ObjectKeyFromObject(tj)))
	f, err := r.observe(ctx, tj)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planPass(f)
	return r.settle(ctx, plan, r.writer().Execute(ctx, plan.PassPlan))
}

// writer is the pass's one writer: the TrainJob's status with an
// optimistic lock, its events, the deletions, the runtime's and the
// build's writes, and settle's status.
func (r *Reconciler) writer() children.Writer {
	return children.Writer{Client: r.Client, Recorder: r.Recorder}
}

// managedHere: copse reconciles TrainJobs managed by the TrainJob controller
// (the default); MultiKueue's are run on a worker cluster.
func managedHere(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.ManagedByTrainJobController) == trainerv1alpha1.ManagedByTrainJobController
}
