// Package podcliqueset holds the PodCliqueSet controller. For each replica it
// keeps a headless Service, one PodClique per standalone clique and one
// PodCliqueScalingGroup per scaling group; it keeps the scheduler backend's
// gangs in line; it recreates a replica whose gang stayed broken for longer
// than terminationDelay; and it is the only writer of PodCliqueSet status.
package podcliqueset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/scheduler"
)

// Reconciler reconciles PodCliqueSets.
type Reconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Backend  scheduler.Backend
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques;podcliquescalinggroups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass of the flow described in docs/architecture.md:
// observe the children, carry out recreations already recorded in status,
// decide (gang terminations for Inference; restarts, failure and success
// for Training), converge the children and gangs, then write status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("podcliqueset", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)

	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pcs.DeletionTimestamp.IsZero() {
		// Children go with it through their owner references.
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()

	observed, err := r.observe(ctx, pcs)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observe children of %s: %w", req.NamespacedName, err)
	}
	health := assessReplicas(pcs, observed)
	terminal := pcs.Status.Phase.IsTerminal()
	failing := isFailing(pcs)

	var failures stepFailures
	progress := recreationProgress{inProgress: map[int]bool{}, finished: map[int]bool{}}
	if !terminal {
		progress, err = r.progressRecreations(ctx, pcs, observed)
		failures.add(errCodeRecreateReplica, err)
	}

	d := r.decide(pcs, health, progress.inProgress, terminal, failing, now)
	newRecreations, err := r.planRecreations(ctx, pcs, observed, d.recreate, d.reason, now)
	failures.add(errCodeRecreateReplica, err)
	for _, rec := range newRecreations {
		progress.inProgress[int(rec.ReplicaIndex)] = true
	}

	switch {
	case failing:
		// The failure is durable (an earlier pass wrote it): stop every pod
		// that still runs. Pods that already ended stay, for their logs.
		failures.add(errCodeTerminatePods, r.terminateActivePods(ctx, observed))
	case !terminal && d.failReason == "":
		failures.add(errCodeSyncChildren, r.syncChildren(ctx, pcs, observed, progress.inProgress))
		failures.add(errCodeSyncGangs, r.syncGangs(ctx, pcs, observed))
	}

	status := computeStatus(pcs, statusInputs{
		observed:       observed,
		health:         health,
		newRecreations: newRecreations,
		finished:       progress.finished,
		restartCount:   d.restartCount,
		failReason:     d.failReason,
		failMessage:    d.failMessage,
		failures:       failures,
		now:            now,
	})
	previous := pcs.Status.DeepCopy()
	if err := r.writeStatus(ctx, pcs, status); err != nil {
		if apierrors.IsConflict(err) {
			// Our view was stale; the next pass starts from fresh data.
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	r.recordEvents(pcs, previous, &status, health, newRecreations)

	if err := failures.err(); err != nil {
		return ctrl.Result{}, err
	}
	if len(newRecreations) > 0 || d.failReason != "" {
		// Recorded decisions are carried out by the next pass, which reads
		// them back from the API server.
		return ctrl.Result{Requeue: true}, nil
	}
	if isFailing(pcs) && !pcs.Status.Phase.IsTerminal() {
		// Pods are terminating; their deletion events bring us back, this
		// is only the safety net for a missed one.
		return ctrl.Result{RequeueAfter: 5 * minRequeue}, nil
	}
	return ctrl.Result{RequeueAfter: d.requeueAfter}, nil
}

// passDecision is what one pass decided, for either workload type.
type passDecision struct {
	recreate     []int
	reason       copsev1alpha1.RecreationReason
	restartCount int32
	failReason   string
	failMessage  string
	requeueAfter time.Duration
}

// decide gathers the inputs of the workload type's pure decision function.
func (r *Reconciler) decide(pcs *copsev1alpha1.PodCliqueSet, health []replicaHealth, inProgress map[int]bool,
	terminal, failing bool, now time.Time) passDecision {
	if pcs.Spec.WorkloadType != copsev1alpha1.WorkloadTypeTraining {
		g := decideGangTerminations(health, inProgress, terminationDelay(pcs), now)
		return passDecision{recreate: g.recreate, reason: copsev1alpha1.RecreationReasonGangTermination,
			restartCount: pcs.Status.RestartCount, requeueAfter: g.requeueAfter}
	}
	in := trainingInputs{
		replicas:         health,
		inProgress:       inProgress,
		restartCount:     pcs.Status.RestartCount,
		terminationDelay: terminationDelay(pcs),
		failing:          failing,
		terminal:         terminal,
		now:              now,
	}
	if ts := pcs.Spec.TrainingSpec; ts != nil {
		if ts.MaxRestarts != nil {
			in.maxRestarts = *ts.MaxRestarts
		}
		if ts.MaxRuntime != nil {
			in.maxRuntime = &ts.MaxRuntime.Duration
		}
	}
	if pcs.Status.StartTime != nil {
		in.startTime = &pcs.Status.StartTime.Time
	}
	t := decideTraining(in)
	return passDecision{recreate: t.restart, reason: copsev1alpha1.RecreationReasonTrainingRestart,
		restartCount: t.restartCount, failReason: t.failReason, failMessage: t.failMessage, requeueAfter: t.requeueAfter}
}

// terminationDelay is the PodCliqueSet's terminationDelay. When unset (the
// defaulting webhook normally sets it) it is Grove's 4h for Inference and 0
// for Training, where a missing worker stops all progress.
func terminationDelay(pcs *copsev1alpha1.PodCliqueSet) time.Duration {
	if d := pcs.Spec.Template.TerminationDelay; d != nil {
		return d.Duration
	}
	if pcs.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining {
		return 0
	}
	return DefaultTerminationDelay
}

// isFailing: the Failed condition is True, the workload's failure is decided.
func isFailing(pcs *copsev1alpha1.PodCliqueSet) bool {
	return meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
}

func describeBreach(health []replicaHealth, replica int) string {
	for _, h := range health {
		if h.index == replica {
			return fmt.Sprintf("breached since %s: %v", h.breachedSince.UTC().Format(time.RFC3339), h.breachedBy)
		}
	}
	return "no longer observed"
}
