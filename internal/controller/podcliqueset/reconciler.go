// Package podcliqueset holds the PodCliqueSet controller. For each replica it
// keeps the objects of the resource table (a headless Service, one
// PodClique per standalone clique, one PodCliqueScalingGroup per scaling
// group, the scheduler backend's gangs); it recreates a replica whose gang
// stayed broken for longer than terminationDelay, or, for Training, whose
// run failed, within the restart budget; it ends a Training workload
// Succeeded or Failed; and it is the only writer of PodCliqueSet status.
package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/metrics"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/scheduler"
)

// Reconciler reconciles PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader): a member the cache misses is confirmed deleted
	// there before the replica restarts for it.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Backend   scheduler.Backend
	// Resources are the resource table's rows beyond copse's own and the
	// backend's: optional features' per-replica kinds, such as MNNVL's
	// ComputeDomains (blueprint.ComputeDomains). They come first, so that a
	// replica's run gets them before its PodCliques make pods.
	Resources []blueprint.ReplicaResource
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// WriteBudget bounds the objects one pass creates and deletes; 0 means the
	// configuration's default.
	WriteBudget int
	// IncompleteGangTimeout is how long a gang placed with a clique below
	// its minAvailable may hold its nodes before the replica's pods are
	// recreated (the configuration's scheduler.incompleteGangTimeout); 0
	// means never.
	IncompleteGangTimeout time.Duration
	// InPlaceRestartTimeout is how long a restart in place may keep its
	// barrier before the replica is recreated (the configuration's
	// scheduler.inPlaceRestartTimeout); 0 means never.
	InPlaceRestartTimeout time.Duration
	// TopologyAwareScheduling: topologyConstraints are applied (the
	// operator configuration's topologyAwareScheduling.enabled, with the
	// Workload scheduler backend); otherwise none is, and a PodCliqueSet
	// with constraints says so in its TopologyLevelsUnavailable condition.
	TopologyAwareScheduling bool
	// Kueue is the operator configuration's kueue.enabled: a PodCliqueSet
	// labelled kueue.x-k8s.io/queue-name gets its Admitted condition here
	// (observeAdmission), and its Kueue Workload's changes wake it.
	Kueue bool
	// KueueMaxPodSets is the Kueue installed's limit of pod sets
	// (kueue.ServedMaxPodSets); 0 for kueue.DefaultMaxPodSets.
	KueueMaxPodSets int

	written expectations.WrittenVersions
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques;podcliquescalinggroups,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile runs one pass of the flow described in docs/architecture.md:
//
//	observe   the resource table's objects and the pods, from the cache
//	assess    each replica: health, start, completion, root cause   (pure)
//	decide    recreations, restarts, failure, success                (pure)
//	status    computed once and written with an optimistic lock      (pure + one write)
//	events    for the transitions the write made durable
//	act       on the written status: delete the old runs of replicas being
//	          recreated, terminate a failed workload's pods, create what
//	          replicas that may run (and the PodCliqueSet as a whole) lack
//	          and bring existing objects to the template, delete the old
//	          pods of the replica a rolling update records as currentlyUpdating
//
// Every destructive action follows a durable decision: it is taken from the
// status as written, so a crash at any line resumes the same decision.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("podcliqueset", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)
	key := req.String()

	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pcs.DeletionTimestamp.IsZero() {
		// Children go with it through their owner references.
		return ctrl.Result{}, nil
	}
	if r.written.Behind(key, pcs) {
		logger.V(1).Info("the cache has not caught up with the last status write yet")
		return ctrl.Result{RequeueAfter: requeue.CacheCatchUp}, nil
	}
	now := r.Clock.Now()

	obs, err := r.observe(ctx, pcs)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observe children of %s: %w", req.NamespacedName, err)
	}
	if err := r.observeDeletedMembers(ctx, pcs, obs, now); err != nil {
		return ctrl.Result{}, fmt.Errorf("check the runs of %s for members deleted from outside: %w", req.NamespacedName, err)
	}
	admission, err := r.observeAdmission(ctx, pcs, obs, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	replicas := assessReplicas(pcs, obs)
	progress := assessRecreations(pcs.Status.ReplicaRecreations, obs.uids(), obs.pods)
	startTime := startTimeCandidate(pcs, replicas, now)
	d := decide(pcs, replicas, progress.inProgress, obs.currentRuns(pcs, r.resources()), startTime, now)
	gangs := gangFactsOf(pcs, obs, r.gangKind(), progress.inProgress)
	placement := decidePlacement(pcs, gangs, replicas, progress.inProgress, d, r.IncompleteGangTimeout, now)
	barriers := decideBarriers(pcs, d, placement, r.InPlaceRestartTimeout, now)
	newRecreations := slices.Concat(r.planRecreations(pcs, obs, d.recreate, d.reason, now),
		r.planRecreations(pcs, obs, d.recreateUncounted, copsev1alpha1.RecreationReasonUncountedRestart, now),
		r.planRecreations(pcs, obs, placement.recreate, copsev1alpha1.RecreationReasonIncompletePlacement, now),
		r.planRecreations(pcs, obs, barriers.recreate, copsev1alpha1.RecreationReasonInPlaceRestartTimeout, now))
	rolloutIn := rolloutInputsOf(pcs, obs, replicas, recreatingReplicas(progress.inProgress, newRecreations), now)
	rollout := decideRollout(rolloutIn)

	status := computeStatus(pcs, statusInputs{
		observed:              obs,
		replicas:              replicas,
		progress:              progress,
		newRecreations:        newRecreations,
		decision:              d,
		startTime:             startTime,
		now:                   now,
		gangScheduling:        r.gangKind() != "",
		gangs:                 gangs,
		incompleteGangTimeout: r.IncompleteGangTimeout,
		rollout:               rollout,
		rolloutReplicas:       rolloutIn.replicas,
		admission:             admission,
	})
	previous := pcs.Status.DeepCopy()
	written, err := r.writeStatus(ctx, pcs, status)
	if err != nil {
		if apierrors.IsConflict(err) {
			// Our view was stale; the next pass starts from fresh data.
			return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
		}
		return ctrl.Result{}, err
	}
	r.recordTransitions(written, previous, replicas, newRecreations, obs.pods, now)
	r.recordRolloutEvents(written, rollout)

	result, failures := r.act(ctx, written, obs, rollout)
	if err := r.noteFailures(ctx, written, failures, now); err != nil {
		return ctrl.Result{}, err
	}
	if err := failures.err(); err != nil {
		return ctrl.Result{}, err
	}
	result = requeue.Earliest(result, ctrl.Result{RequeueAfter: d.requeueAfter})
	result = requeue.Earliest(result, ctrl.Result{RequeueAfter: barriers.requeueAfter})
	return requeue.Earliest(result, ctrl.Result{RequeueAfter: placement.requeueAfter}), nil
}

// act carries out what the written status says: it is durable, so acting
// on it is safe whatever happens next.
func (r *Reconciler) act(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, rollout rolloutDecision) (ctrl.Result, stepFailures) {
	var failures stepFailures
	budget := children.NewBudget(r.writeBudget()).OnCut(metrics.WriteBudgetCut("PodCliqueSet"))
	if lifecycle.WorkloadEnded(pcs) {
		// No outcome is recorded any more: the pods that ended, kept for
		// their logs, need no finalizer.
		failures.add(errCodeTerminatePods, r.releaseEndedPods(ctx, pcs, obs, budget))
	}
	if pcs.Status.Phase.IsTerminal() {
		return requeueIfCut(budget), failures
	}
	failures.add(errCodeRecreateReplica, r.deleteOldRuns(ctx, pcs, obs, budget))
	if lifecycle.WorkloadEnded(pcs) {
		// The outcome (a failure, or the success policy met) is durable:
		// stop every pod that still runs. Pods that already ended stay, for
		// their logs.
		failures.add(errCodeTerminatePods, r.terminateActivePods(ctx, pcs, obs, budget))
	} else {
		failures.add(errCodeTerminatePods, r.endLingeringPods(ctx, pcs, obs, budget))
		failures.add(errCodeSyncChildren, r.converge(ctx, pcs, obs, budget))
		failures.add(errCodeSyncChildren, claimtemplates.MissingError(obs.missingClaimTemplates))
		failures.add(errCodeRollingUpdate, r.deleteOldPods(ctx, pcs, rollout, budget))
	}
	result := requeueIfCut(budget)
	if at := overdueCheckAt(pcs, obs); !at.IsZero() {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: max(at.Sub(r.Clock.Now()), minRequeue)})
	}
	return result, failures
}

// requeueIfCut asks for the next pass at once when the budget left work.
func requeueIfCut(budget *children.Budget) ctrl.Result {
	if budget.Exhausted() {
		return ctrl.Result{RequeueAfter: requeue.Soon}
	}
	return ctrl.Result{}
}

// gangKind is the resource table row whose objects are the scheduler's
// gangs, "" when the backend has none.
func (r *Reconciler) gangKind() string {
	if r.Backend.Name() == scheduler.BackendWorkload {
		return scheduler.PodGroupKind
	}
	return ""
}

func (r *Reconciler) writeBudget() int {
	if r.WriteBudget > 0 {
		return r.WriteBudget
	}
	return int(configv1alpha1.DefaultMaxWritesPerReconcile)
}

// isFailing: the Failed condition is True, the workload's failure is decided.
func isFailing(pcs *copsev1alpha1.PodCliqueSet) bool {
	return meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
}

// successCriteriaMet: the SuccessCriteriaMet condition is True, the
// workload's success is decided.
func successCriteriaMet(pcs *copsev1alpha1.PodCliqueSet) bool {
	return meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
}
