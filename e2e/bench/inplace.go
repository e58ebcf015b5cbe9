package bench

import (
	"context"
	"fmt"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// Measurement names of the restart-inplace scenario (Run.Seconds keys),
// from the moment the watch saw the failed pod's container terminated.
const (
	// MeasureInPlaceAllRunning: to every pod of the replica seen running
	// the new attempt's workload (Running, every main container running,
	// its startup gate open).
	MeasureInPlaceAllRunning = "inPlaceAllRunning"
	// MeasureInPlaceBarrierLifted: to the replica's barrier lifted
	// (status.replicaRecreations[].barrierLiftedAt seen).
	MeasureInPlaceBarrierLifted = "inPlaceBarrierLifted"
	// MeasureInPlaceAllMoved: to every kept pod seen in the new attempt
	// (copse moved it); MeasureInPlaceAllHeld: to every kept pod seen held
	// at its gate (the kubelet, here kwok, restarted its containers).
	MeasureInPlaceAllMoved = "inPlaceAllMoved"
	MeasureInPlaceAllHeld  = "inPlaceAllHeld"
)

// KeptPlacement is what a restart in place kept of the replica.
type KeptPlacement struct {
	// Healthy is how many pods were running when the restart began (all
	// but the failed one); KeptOnNode how many of them run the new
	// attempt as the same pod on the same node.
	Healthy    int `json:"healthy"`
	KeptOnNode int `json:"keptOnNode"`
	// PodGroupKept: the replica's PodGroup has the same UID after the
	// restart.
	PodGroupKept bool `json:"podGroupKept"`
}

// restartCopseInPlace is the restart scenario's copse run with
// trainingSpec.restartStrategy InPlace: a Training replica of n pods with
// maxRestarts 1; one pod exits 1; copse restarts the replica in place.
func (b *Bench) restartCopseInPlace(ctx context.Context, rep, n int) Run {
	run := Run{Scenario: ScenarioRestartInPlace, System: SystemCopse, Size: n, Repetition: rep, Seconds: map[string]float64{}, started: time.Now()}
	err := b.inNamespace(ctx, "bench-restart-inplace", func(ctx context.Context, ns string) error {
		pods, pcsT, pclqT, err := b.watchCopse(ctx, ns)
		if err != nil {
			return err
		}
		pcs := trainingPCS(ns, b.nextName(), int32(n), 1, nil, false)
		pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
		if err := b.env.Client.Create(ctx, pcs); err != nil {
			return fmt.Errorf("create PodCliqueSet: %w", err)
		}
		first, next := selector(labels.AttemptKey, "0"), selector(labels.AttemptKey, "1")
		if err := waitPods(ctx, b.opts.RunTimeout, pods, first, n, "Running", running); err != nil {
			return err
		}
		gang := &schedulingv1beta1.PodGroup{}
		if err := b.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.BaseGang(pcs.Name, 0)}, gang); err != nil {
			return fmt.Errorf("read the replica's PodGroup: %w", err)
		}
		before := map[string]podRecord{}
		for _, r := range pods.Pods(first) {
			before[string(r.UID)] = r
		}
		victim := pods.Pods(first)[0]
		waitQuiet(ctx, pods, pcsT, pclqT)
		cost, err := b.startOperatorCost(ctx)
		if err != nil {
			return err
		}
		if err := b.failPod(ctx, ns, victim.Name); err != nil {
			return err
		}
		inNewAttempt := func(r podRecord) time.Time { return r.WorkloadRunning["1"] }
		if err := waitPods(ctx, b.opts.RunTimeout, pods, next, n, "running attempt 1", inNewAttempt); err != nil {
			return err
		}
		var failedSeen time.Time
		for _, r := range pods.Pods(first) {
			if r.UID == victim.UID {
				failedSeen = r.Terminated
			}
		}
		restarted := pods.Pods(next)
		if failedSeen.IsZero() {
			return fmt.Errorf("the failed pod %s was never seen terminated", victim.Name)
		}
		run.Seconds[MeasureInPlaceAllRunning] = nthTime(field(restarted, inNewAttempt), n).Sub(failedSeen).Seconds()
		if lifted := barrierLiftedSeen(pcsT); !lifted.IsZero() {
			run.Seconds[MeasureInPlaceBarrierLifted] = lifted.Sub(failedSeen).Seconds()
		}
		kept := &KeptPlacement{Healthy: len(before) - 1}
		var moved, held []time.Time
		for _, r := range restarted {
			if was, ok := before[string(r.UID)]; ok {
				moved, held = append(moved, r.AttemptSeen["1"]), append(held, r.HeldAt)
				if was.Node == r.Node {
					kept.KeptOnNode++
				}
			}
		}
		if last := nthTime(moved, len(moved)); !last.IsZero() {
			run.Seconds[MeasureInPlaceAllMoved] = last.Sub(failedSeen).Seconds()
		}
		if last := nthTime(held, len(held)); !last.IsZero() {
			run.Seconds[MeasureInPlaceAllHeld] = last.Sub(failedSeen).Seconds()
		}
		after := &schedulingv1beta1.PodGroup{}
		if err := b.env.Client.Get(ctx, client.ObjectKeyFromObject(gang), after); err == nil {
			kept.PodGroupKept = after.UID == gang.UID
		}
		run.Kept = kept
		waitQuiet(ctx, pods, pcsT, pclqT)
		return cost.finish(ctx, &run, n)
	})
	return b.record(run, err)
}

// barrierLiftedSeen is when the PodCliqueSet watch first saw a restart in
// place's barrier lifted; zero when it did not.
func barrierLiftedSeen(pcsT *objTracker) time.Time {
	var first time.Time
	for _, o := range pcsT.Objects() {
		if !o.BarrierLifted.IsZero() && (first.IsZero() || o.BarrierLifted.Before(first)) {
			first = o.BarrierLifted
		}
	}
	return first
}

func keptOnNodeShare(r Run) (float64, bool) {
	if r.Kept == nil || r.Kept.Healthy == 0 {
		return 0, false
	}
	return float64(r.Kept.KeptOnNode) / float64(r.Kept.Healthy), true
}

func podGroupKept(r Run) (float64, bool) {
	if r.Kept == nil {
		return 0, false
	}
	if r.Kept.PodGroupKept {
		return 1, true
	}
	return 0, true
}
