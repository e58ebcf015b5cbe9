package podcliqueset

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/metrics"
	"github.com/copse-dev/copse/internal/requeue"
)

// passConfig is the operator's configuration a pass decides with.
type passConfig struct {
	// rows is the resource table (Reconciler.resources).
	rows []blueprint.ReplicaResource
	// gangKind is the row of the scheduler's gangs, "" without gangs.
	gangKind string
	// incompleteGangTimeout and inPlaceRestartTimeout bound a gang placed
	// incomplete and a restart in place's barrier; 0 means never.
	incompleteGangTimeout, inPlaceRestartTimeout time.Duration
}

// passPlan is the pass's plan for the writer, and the failures known
// before any write (they count in status.lastErrors and the pass's error as
// a failed write does).
type passPlan struct {
	children.PassPlan
	failures stepFailures
}

// planPass decides everything one pass writes, from its facts alone (pure):
//
//	assess    each replica: health, start, completion, root cause
//	decide    restarts, failure, success, placement, barriers, one list
//	          of recreations (decideRecreations), the rollout step
//	status    computed once (computeStatus)
//	events    the transitions from the status read to the one planned
//	writes    the object and pod writes, decided from the planned status
//	          (planWrites)
//	settle    status.lastErrors from what the writes did (settleFailures)
func planPass(f facts, cfg passConfig) passPlan {
	pcs, obs, now := f.pcs, f.obs, f.now
	replicas := assessReplicas(pcs, obs)
	progress := assessRecreations(pcs.Status.ReplicaRecreations, obs.objectUIDs, obs.pods)
	startTime := startTimeCandidate(pcs, replicas, now)
	d := decide(pcs, obs.records, replicas, progress.inProgress, obs.currentRuns(cfg.rows), startTime, now)
	gangs := gangFactsOf(pcs, obs, cfg.gangKind, progress.inProgress)
	placement := decidePlacement(pcs, gangs, replicas, progress.inProgress, d, cfg.incompleteGangTimeout, now)
	barriers := decideBarriers(pcs, d, placement, cfg.inPlaceRestartTimeout, now)
	newRecreations := decideRecreations(pcs, obs, cfg.rows, now,
		recreationAsk{d.recreate, d.reason},
		recreationAsk{d.recreateUncounted, copsev1alpha1.RecreationReasonUncountedRestart},
		recreationAsk{placement.recreate, copsev1alpha1.RecreationReasonIncompletePlacement},
		recreationAsk{barriers.recreate, copsev1alpha1.RecreationReasonInPlaceRestartTimeout})
	rolloutIn := rolloutInputsOf(pcs, obs, replicas, recreatingReplicas(progress.inProgress, newRecreations), now)
	rollout := decideRollout(rolloutIn)

	planned := pcs.DeepCopy()
	planned.Status = computeStatus(pcs, statusInputs{
		observed: obs, replicas: replicas, progress: progress, newRecreations: newRecreations, decision: d,
		startTime: startTime, now: now, gangScheduling: cfg.gangKind != "", gangs: gangs,
		incompleteGangTimeout: cfg.incompleteGangTimeout, rollout: rollout, rolloutReplicas: rolloutIn.replicas,
		admission: obs.admission,
	})
	events := append(transitionEvents(planned, &pcs.Status, &planned.Status, replicas, newRecreations), rolloutEvents(planned, rollout)...)
	plannedRecords := lifecycle.RecordsOf(planned)
	writes := planWrites(planned, plannedRecords, obs, cfg.rows, rollout)

	result := ctrl.Result{RequeueAfter: d.requeueAfter}
	result = requeue.Earliest(result, ctrl.Result{RequeueAfter: barriers.requeueAfter})
	result = requeue.Earliest(result, ctrl.Result{RequeueAfter: placement.requeueAfter})
	if at := overdueCheckAt(planned, plannedRecords, obs); !at.IsZero() {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: max(at.Sub(now), minRequeue)})
	}
	previous := pcs.Status.DeepCopy()
	return passPlan{failures: writes.failures, PassPlan: children.PassPlan{
		Observed: pcs,
		Status:   planned,
		Events:   events,
		OnWritten: []func(client.Object){func(written client.Object) {
			w := written.(*copsev1alpha1.PodCliqueSet)
			metrics.Record(metrics.TransitionsOf(w, previous, &w.Status, newRecreations, obs.pods, now))
		}},
		Deletes:      writes.deletes,
		Objects:      writes.objects,
		Pods:         writes.pods,
		PodTimeBound: writes.timeBound,
		RequeueAfter: result.RequeueAfter,
		Settle:       settleFailures(writes.failures, now),
	}}
}
