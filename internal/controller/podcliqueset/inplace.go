package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// A restart in place (trainingSpec.restartStrategy InPlace) is a recreation
// that keeps the pods it can. The steps, each after a durable status:
//
//	decided    ReplicaRecreation{InPlace: true}               planRecreations
//	old run    the pods kept are moved to the new attempt:     moveKeptPods
//	           their old controller reference removed, the
//	           attempt label raised, the startup gate closed
//	           (their restart agent then has the kubelet
//	           restart every container in place); the pods not
//	           kept deleted; then the recorded PodCliques and
//	           scaling groups deleted (the gangs and
//	           ComputeDomains are not recorded: they stay)
//	completed  recorded objects and old-attempt pods gone      assessRecreations
//	           (CompletedAt); the new run's objects are made
//	adopted    the new run's PodCliques adopt the moved pods   podclique controller
//	barrier    no pod of the replica runs the old attempt      barrierLifted
//	           any more (BarrierLiftedAt)
//	gates      the new run's startup gates open                podclique controller

// restartsInPlace reports whether a recreation for reason keeps the
// replica's pods: a restart of a workload with restartStrategy InPlace.
// Suspensions, gang terminations and incomplete placements recreate.
func restartsInPlace(pcs *copsev1alpha1.PodCliqueSet, reason copsev1alpha1.RecreationReason) bool {
	return pcs.RestartsInPlace() &&
		(reason == copsev1alpha1.RecreationReasonTrainingRestart || reason == copsev1alpha1.RecreationReasonUncountedRestart)
}

// keptInPlace reports whether a restart in place keeps a pod of the old
// run: it neither ended nor is being deleted, and its node (if it has one)
// is still there. Every other pod of the old run is deleted and made anew.
func keptInPlace(p podstate.Summary, lostNodes map[string]bool) bool {
	return p.Active() && !lostNodes[p.Node]
}

// splitKept splits the old run's pods into those a restart in place keeps
// and those it deletes.
func splitKept(pods []podstate.Summary, lostNodes map[string]bool) (kept, deleted []podstate.Summary) {
	for _, p := range pods {
		if keptInPlace(p, lostNodes) {
			kept = append(kept, p)
		} else {
			deleted = append(deleted, p)
		}
	}
	return kept, deleted
}

// barrierLifted reports whether no pod of the replica runs an attempt
// before attempt any more: every pod of an earlier attempt has ended, and
// every pod adopted into attempt (its gate closed) is held at its gate, its
// old containers gone, or has ended.
func barrierLifted(pods []podstate.Summary, attempt int32) bool {
	for _, p := range pods {
		switch {
		case p.Attempt < int(attempt) && p.HoldsNode():
			return false
		case p.Attempt == int(attempt) && p.StartupGate == labels.StartupGateClosed && !p.GateHolding && !p.Terminal():
			return false
		}
	}
	return true
}

// observeLostNodes finds the nodes of the pods that restarts in place in
// progress would keep, and records those that are gone or being deleted:
// their pods cannot restart where they are. A kept pod whose node goes
// later is deleted by the pod garbage collector, a failure of the new
// attempt.
func (r *Reconciler) observeLostNodes(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed) error {
	for _, rec := range pcs.Status.ReplicaRecreations {
		if !rec.InPlace || rec.CompletedAt != nil {
			continue
		}
		for _, p := range oldRunPods(obs.replica(int(rec.ReplicaIndex)).pods, int(rec.ReplicaIndex), rec.Attempt) {
			if p.Node == "" || !p.Active() {
				continue
			}
			if _, seen := obs.lostNodes[p.Node]; seen {
				continue
			}
			lost, err := r.nodeLost(ctx, p.Node)
			if err != nil {
				return err
			}
			if obs.lostNodes == nil {
				obs.lostNodes = map[string]bool{}
			}
			obs.lostNodes[p.Node] = lost
		}
	}
	return nil
}

// nodeLost reports whether the node is gone or being deleted, from the
// cache's metadata of nodes.
func (r *Reconciler) nodeLost(ctx context.Context, name string) (bool, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	return !node.DeletionTimestamp.IsZero(), nil
}

// moveKeptPods moves the pods a restart in place keeps to the new attempt,
// each in one write with an optimistic lock: the controller reference to
// the old run's PodClique goes (the recorded objects can then be deleted
// without the garbage collector taking the pods along), the attempt label
// becomes rec.Attempt and the startup gate closes. The pod's restart agent
// sees the new attempt and has the kubelet restart every container where
// it is; the gate then holds them until the barrier lifts.
func (r *Reconciler) moveKeptPods(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, rec copsev1alpha1.ReplicaRecreation, pods []podstate.Summary) error {
	if len(pods) == 0 {
		return nil
	}
	recorded := make(map[types.UID]bool, len(rec.Deleting))
	for _, uid := range rec.Deleting {
		recorded[uid] = true
	}
	stopBy := time.Now().Add(children.PassTime) // wall time: it bounds work, not a decision
	moved, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, stopBy, func(ctx context.Context, i int) error {
		return r.moveKeptPod(ctx, pcs.Namespace, pods[i], rec.Attempt, recorded)
	})
	log.FromContext(ctx).V(1).Info("moved the pods a restart in place keeps to the new attempt", "replica", rec.ReplicaIndex, "attempt", rec.Attempt, "moved", moved, "planned", len(pods))
	if err != nil {
		return fmt.Errorf("replica %d's restart in place: %w", rec.ReplicaIndex, err)
	}
	return nil
}

func (r *Reconciler) moveKeptPod(ctx context.Context, namespace string, p podstate.Summary, attempt int32, recorded map[types.UID]bool) error {
	return children.MutatePod(ctx, r.Client, namespace, p, func(pod *corev1.Pod) {
		pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool { return recorded[ref.UID] })
		pod.Labels[labels.AttemptKey] = strconv.Itoa(int(attempt))
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[labels.StartupGateAnnotation] = labels.StartupGateClosed
	})
}
