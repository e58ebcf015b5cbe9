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
// decide new gang terminations, converge the children and gangs, then write
// status once.
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

	var failures stepFailures
	progress, err := r.progressRecreations(ctx, pcs, observed)
	failures.add(errCodeRecreateReplica, err)

	decision := decideGangTerminations(health, progress.inProgress, terminationDelay(pcs), now)
	newRecreations, err := r.planRecreations(ctx, pcs, observed, decision.recreate, copsev1alpha1.RecreationReasonGangTermination, now)
	failures.add(errCodeRecreateReplica, err)
	for _, rec := range newRecreations {
		progress.inProgress[int(rec.ReplicaIndex)] = true
	}

	failures.add(errCodeSyncChildren, r.syncChildren(ctx, pcs, observed, progress.inProgress))
	failures.add(errCodeSyncGangs, r.syncGangs(ctx, pcs, observed))

	status := computeStatus(pcs, statusInputs{
		observed:       observed,
		health:         health,
		newRecreations: newRecreations,
		finished:       progress.finished,
		failures:       failures,
		now:            now,
	})
	if err := r.writeStatus(ctx, pcs, status); err != nil {
		if apierrors.IsConflict(err) {
			// Our view was stale; the next pass starts from fresh data.
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	for _, rec := range newRecreations {
		r.Recorder.Eventf(pcs, nil, "Warning", "GangTermination", "Recreate",
			"replica %d stayed below minAvailable for longer than terminationDelay (%s); recreating it (%s)",
			rec.ReplicaIndex, terminationDelay(pcs), describeBreach(health, int(rec.ReplicaIndex)))
	}
	if err := failures.err(); err != nil {
		return ctrl.Result{}, err
	}
	if len(newRecreations) > 0 {
		// The recorded recreations are carried out on the next pass, which
		// reads them back from the API server.
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{RequeueAfter: decision.requeueAfter}, nil
}

// terminationDelay is the PodCliqueSet's terminationDelay, Grove's 4h when unset.
func terminationDelay(pcs *copsev1alpha1.PodCliqueSet) time.Duration {
	if d := pcs.Spec.Template.TerminationDelay; d != nil {
		return d.Duration
	}
	return DefaultTerminationDelay
}

func describeBreach(health []replicaHealth, replica int) string {
	for _, h := range health {
		if h.index == replica {
			return fmt.Sprintf("breached since %s: %v", h.breachedSince.UTC().Format(time.RFC3339), h.breachedBy)
		}
	}
	return "no longer observed"
}
