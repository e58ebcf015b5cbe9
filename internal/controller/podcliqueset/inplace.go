package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

// A restart in place (trainingSpec.restartStrategy InPlace) is a recreation
// that keeps the pods it can. The steps, each after a durable status:
//
//	decided    ReplicaRecreation{InPlace: true}               decideRecreations
//	old run    the pods kept are moved to the new attempt:     planOldRuns (PodMove)
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
	return pcs.RestartsInPlace() && reason.IsRestart()
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
