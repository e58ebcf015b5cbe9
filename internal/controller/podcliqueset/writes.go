package podcliqueset

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// passWrites are the object and pod writes of one pass. They are decided
// from the status the pass writes (planned), never from the status it
// read, and carried out only once that status is durable: every
// destructive write follows a durable decision, so a crash at any line
// resumes the same one.
type passWrites struct {
	deletes []children.Deletion
	objects []children.Set
	pods    []children.PodWrite
	// timeBound: the pods' burst stops after children.PassTime (moves of a
	// restart in place: each is a read and a patch, and the agents' own
	// writes follow it).
	timeBound bool
	// failures known before any write: a ResourceClaimTemplate that does
	// not exist yet.
	failures stepFailures
	// written are the pods a write is planned for: the first step that
	// names a pod writes it (an ended workload's old-run pods are not
	// deleted twice).
	written map[types.UID]bool
}

// planWrites decides the pass's writes, in durable order:
//
//	ended      delete the stopped pods no PodClique owns (moved by a
//	           restart in place the workload ended before adopting them:
//	           nothing would ever remove them), release the outcome
//	           finalizer of the others that stopped (kept for their logs,
//	           with their PodCliques; no outcome is recorded any more)
//	old runs   of the recreations in progress: kept pods moved to the
//	           new attempt, the others deleted, then the recorded objects
//	ended      every pod still running deleted (a failure, or the success
//	           policy met), or, while it runs:
//	suspended  the lingering pods of replicas that succeeded deleted
//	converge   what replicas that may run lack created, objects brought
//	           to the template (children.Pass)
//	rollout    the old pods of the replica the update records as
//	           currentlyUpdating deleted
//
// A terminal workload gets only the first.
func planWrites(planned *copsev1alpha1.PodCliqueSet, plannedRecords lifecycle.Records, obs *observed, rows []blueprint.ReplicaResource, rollout rolloutDecision) passWrites {
	var w passWrites
	ended := plannedRecords.Ended
	if ended {
		w.terminatePods(children.PodDelete, endedOrphans(obs))
		w.terminatePods(children.PodRelease, endedHeldPods(obs))
	}
	if planned.Status.Phase.IsTerminal() {
		return w
	}
	w.planOldRuns(planned, obs, rows)
	if ended {
		w.terminatePods(children.PodDelete, obs.activePods)
		return w
	}
	w.terminatePods(children.PodDelete, lingeringPods(plannedRecords, obs.activePods))
	w.objects = convergeSets(planned, plannedRecords, obs, rows)
	w.failures.add(errCodeSyncChildren, claimtemplates.MissingError(obs.missingClaimTemplates))
	w.addRollout(planned, rollout)
	return w
}

// endedOrphans are the pods of an ended workload that stopped and have no
// controller: a restart in place moved them to an attempt whose PodCliques
// never adopted them (the workload ended first). Owned by nothing, they
// would outlive the workload, its deletion included.
func endedOrphans(obs *observed) []podstate.Summary {
	var orphans []podstate.Summary
	for _, p := range obs.pods {
		if p.ControllerUID == "" && p.Terminal() && !p.Terminating {
			orphans = append(orphans, p)
		}
	}
	return orphans
}

// endedHeldPods are the pods of an ended workload that stopped and still
// carry the outcome finalizer: nothing else would release them once the
// workload's status stops changing.
func endedHeldPods(obs *observed) []podstate.Summary {
	var held []podstate.Summary
	for _, p := range obs.pods {
		if p.HasOutcomeFinalizer && p.Terminal() {
			held = append(held, p)
		}
	}
	return held
}

// terminatePods adds a write of op for each pod, as the step that ends
// pods (errCodeTerminatePods); deletions also release the
// outcome finalizer (the pod is no longer to be accounted for).
func (w *passWrites) terminatePods(op children.PodOp, pods []podstate.Summary) {
	step := string(errCodeTerminatePods)
	for _, p := range pods {
		w.addPod(children.PodWrite{Op: op, Step: step, Pod: p, Release: op == children.PodDelete})
	}
}

// addPod plans write unless an earlier step planned one for its pod.
func (w *passWrites) addPod(write children.PodWrite) {
	if w.written[write.Pod.UID] {
		return
	}
	if w.written == nil {
		w.written = map[types.UID]bool{}
	}
	w.written[write.Pod.UID] = true
	w.pods = append(w.pods, write)
}

// planOldRuns carries out the recreations recorded in status: the old
// run's pods are deleted here rather than left to the garbage collector,
// so that the new run starts as soon as the old one is gone (their grace
// period is what the new run waits for), and then the recorded objects
// that still exist. A restart in place moves the pods it keeps instead;
// the recorded objects go only once no kept pod names them as its
// controller any more, or the garbage collector would take the kept pods
// along. UID preconditions keep every write from touching anything made
// afterwards.
func (w *passWrites) planOldRuns(planned *copsev1alpha1.PodCliqueSet, obs *observed, rows []blueprint.ReplicaResource) {
	step := string(errCodeRecreateReplica)
	for _, rec := range planned.Status.ReplicaRecreations {
		if rec.CompletedAt != nil {
			continue
		}
		replica := int(rec.ReplicaIndex)
		pods := oldRunPods(obs.replicas[replica].pods, replica, rec.Attempt)
		var kept []podstate.Summary
		if rec.InPlace {
			kept, pods = splitKept(pods, obs.lostNodes)
		}
		for _, p := range kept {
			w.addPod(children.PodWrite{Op: children.PodMove, Step: step, Pod: p, Attempt: int(rec.Attempt), DropOwners: rec.Deleting})
			w.timeBound = true
		}
		for _, p := range pods {
			if rec.InPlace && obs.lostNodes[p.Node] {
				w.addPod(children.PodWrite{Op: children.PodDeleteNow, Step: step, Pod: p})
			} else {
				w.addPod(children.PodWrite{Op: children.PodDelete, Step: step, Pod: p, Release: true})
			}
		}
		if len(kept) > 0 {
			continue
		}
		doomed := make(map[types.UID]bool, len(rec.Deleting))
		for _, uid := range rec.Deleting {
			doomed[uid] = true
		}
		for _, row := range rows {
			var recorded []client.Object
			for _, obj := range obs.children.Of(row.Kind, replica) {
				if doomed[obj.GetUID()] {
					recorded = append(recorded, obj)
				}
			}
			if len(recorded) > 0 {
				w.deletes = append(w.deletes, children.Deletion{Step: step, Kind: row.Kind, Objects: recorded})
			}
		}
	}
}

// addRollout deletes the old pods of this pass's rollout step once the
// status records their replica as the one being updated: a crash after the
// write resumes the same replica, and a replica already updated is never
// touched.
func (w *passWrites) addRollout(planned *copsev1alpha1.PodCliqueSet, d rolloutDecision) {
	p := planned.Status.UpdateProgress
	if len(d.deletePods) == 0 || !rollingUpdateInProgress(p) || len(p.CurrentlyUpdating) == 0 ||
		int(p.CurrentlyUpdating[0].ReplicaIndex) != d.deleteReplica {
		return
	}
	for _, pod := range d.deletePods {
		w.addPod(children.PodWrite{Op: children.PodDelete, Step: string(errCodeRollingUpdate), Pod: pod})
	}
}

// convergeSets are the sets that make every replica that may run
// (lifecycle.MayCreatePods) have exactly the objects each row of the
// resource table wants for it, and the PodCliqueSet the objects its rows
// want for it as a whole (their Shared ones): missing ones are created, ones
// a row no longer wants (a scaled-in group's gang) are deleted, and existing
// ones of a row with a Refresh are brought to the template (never a Training
// workload's). Replicas at or beyond spec.replicas lose all their objects.
// Objects a scaling group controls are left to it.
func convergeSets(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed, rows []blueprint.ReplicaResource) []children.Set {
	groupReplicas := obs.groupReplicas
	pass := children.Pass[blueprint.ReplicaInputs]{
		Rows:     rows,
		Observed: obs.children,
		Replicas: int(pcs.Spec.Replicas),
		Inputs: func(replica int) blueprint.ReplicaInputs {
			in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: replica, GroupReplicas: groupReplicas,
				Packing: obs.packing, ClaimTemplates: obs.claimTemplates}
			if replica != children.NoReplica {
				in.Attempt = rec.Attempt(replica)
			}
			return in
		},
		MayCreate: func(replica int) bool {
			return lifecycle.MayCreatePods(rec.Replica(replica, -1)) == ""
		},
		Frozen: pcs.IsTraining(),
	}
	sets := pass.Sets()
	for i := range sets {
		sets[i].Step = string(errCodeSyncChildren)
	}
	return sets
}
