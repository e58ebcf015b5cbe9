package podcliqueset

import (
	"cmp"
	"slices"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// rolloutClique is one PodClique of a replica, reduced to what a rollout
// decides on.
type rolloutClique struct {
	name string
	// gang is the gang its pods join; base: it is in the replica's base
	// gang. group and groupReplica order the scaling-group gangs.
	gang         string
	base         bool
	group        string
	groupReplica int
	// minAvailable is what the clique needs ready (at most its replicas).
	minAvailable int
	// specCurrent: the PodClique carries its template's hash now, so the
	// pods it makes from now on are new ones.
	specCurrent bool
	// ready counts its ready pods that are not terminating; readyUpdated
	// those of them with the template's hash.
	ready, readyUpdated int
	// oldPods are its pods with another hash that neither ended nor are
	// terminating.
	oldPods []podstate.Summary
}

// rolloutReplica is one PodCliqueSet replica, reduced to what a rollout
// decides on.
type rolloutReplica struct {
	index int
	// complete: every PodClique the replica should have exists.
	complete bool
	cliques  []rolloutClique
	// scheduledPods counts its pods bound to a node (Grove's first
	// criterion: a replica with none is updated first).
	scheduledPods int
	// breached: a member reports MinAvailableBreached=True; available:
	// every member reports it False (the replica counts in
	// availableReplicas).
	breached, available bool
	// recreating: a recreation (gang termination) of the replica is under
	// way or decided this pass; it builds the replica afresh from the
	// current spec, so the rollout leaves it alone.
	recreating bool
}

// rolloutInputs is everything a rollout step depends on, as plain values.
type rolloutInputs struct {
	training, onDelete, suspended bool
	// recordedHash is status.currentGenerationHash before this pass (nil on
	// the first pass); computedHash is generationhash.GenerationHash now.
	recordedHash *string
	computedHash string
	// progress is status.updateProgress before this pass.
	progress *grovecorev1alpha1.PodCliqueSetUpdateProgress
	// replicas are the replicas below spec.replicas, by index.
	replicas []rolloutReplica
	now      time.Time
}

// rolloutDecision is one pass's rollout step.
type rolloutDecision struct {
	// hash is status.currentGenerationHash after this pass; progress is
	// status.updateProgress (counts are filled in by computeStatus).
	hash     string
	progress *grovecorev1alpha1.PodCliqueSetUpdateProgress
	// started: a new generation hash started an update this pass.
	started bool
	// replicaStarted and replicaUpdated are the replicas whose update began
	// and ended this pass, -1 for none; completed: the update ended.
	replicaStarted, replicaUpdated int
	completed                      bool
	// deleteReplica is the replica recorded in progress.currentlyUpdating
	// whose old pods deletePods are; act deletes them only after the
	// status naming the replica is written.
	deleteReplica int
	deletePods    []podstate.Summary
}

// decideRollout is the rollout of a new generation hash (Grove's rolling
// update, with whole gangs; see docs/inference.md):
//
//   - The first pass records the hash; a different hash later starts an
//     update (updateStartedAt). OnDelete ends it at once (updateEndedAt =
//     updateStartedAt), once every PodClique carries the template (until
//     then the recorded hash stays): the specs follow the template, pods
//     are replaced when someone deletes them. A Training workload never
//     rolls.
//   - RollingRecreate updates one replica at a time, recorded in
//     currentlyUpdating before any of its pods is deleted. A newer hash in
//     the middle keeps the replica being updated (it is the one already
//     disturbed) and starts counting afresh: every replica with a pod not
//     at the newest hash is updated again.
//   - The replica being updated: nothing while a PodClique of it has not
//     taken the template yet (its new pods would be old ones) or while it is
//     being recreated; then its base gang's old pods, all at once; once the
//     base gang is available with new pods, the scaling-group replicas
//     above minAvailable (a gang each): those not available at once, the
//     available ones one at a time, only while every other gang of the
//     replica is available. It is done when it has no old pod left, every
//     gang is available and its members report it available.
//   - The next replica is, as Grove picks it: one without scheduled pods,
//     then a breached one, then the lowest index; replicas being recreated
//     and replicas removed by a scale-in are skipped. None left: the update
//     ends (updateEndedAt, currentlyUpdating cleared).
//   - A suspended workload has no pods: the update waits.
func decideRollout(in rolloutInputs) rolloutDecision {
	d := rolloutDecision{hash: in.computedHash, replicaStarted: -1, replicaUpdated: -1, deleteReplica: -1}
	if in.progress != nil {
		d.progress = in.progress.DeepCopy()
	}
	now := metav1.NewTime(in.now)
	if in.recordedHash == nil || in.training {
		return d
	}
	if *in.recordedHash != in.computedHash {
		if in.onDelete && !templateTaken(in.replicas) {
			// OnDelete ends an update as it starts, so it starts once every
			// PodClique carries the template: a pod deleted after
			// updateEndedAt shows always comes back with it.
			d.hash = *in.recordedHash
			return d
		}
		d.started = true
		next := &grovecorev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now}
		if in.onDelete {
			next.UpdateEndedAt = &now
		} else if rollingUpdateInProgress(d.progress) {
			next.CurrentlyUpdating = d.progress.CurrentlyUpdating
		}
		d.progress = next
	}
	if d.progress == nil || d.progress.UpdateEndedAt != nil {
		return d
	}
	if in.onDelete {
		// The strategy changed in the middle of an update: nothing is left
		// for copse to do.
		d.progress.UpdateEndedAt = &now
		d.progress.CurrentlyUpdating = nil
		return d
	}
	if in.suspended {
		return d
	}

	if len(d.progress.CurrentlyUpdating) > 0 {
		current := int(d.progress.CurrentlyUpdating[0].ReplicaIndex)
		switch r := replicaByIndex(in.replicas, current); {
		case r == nil:
			// Removed by a scale-in: its objects go with it.
			d.progress.CurrentlyUpdating = nil
		case r.recreating:
			return d
		case replicaUpdated(*r):
			d.replicaUpdated = current
			d.progress.CurrentlyUpdating = nil
		default:
			d.deleteReplica, d.deletePods = current, nextGangPods(*r)
			return d
		}
	}

	var candidates []rolloutReplica
	for _, r := range in.replicas {
		if !r.recreating && hasOldPods(r) {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 0 {
		d.progress.UpdateEndedAt = &now
		d.progress.CurrentlyUpdating = nil
		d.completed = true
		return d
	}
	slices.SortFunc(candidates, updateOrder)
	next := candidates[0]
	d.progress.CurrentlyUpdating = []grovecorev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: int32(next.index), UpdateStartedAt: now}}
	d.replicaStarted = next.index
	d.deleteReplica, d.deletePods = next.index, nextGangPods(next)
	return d
}

// rollingUpdateInProgress: an update is recorded and has not ended.
func rollingUpdateInProgress(p *grovecorev1alpha1.PodCliqueSetUpdateProgress) bool {
	return p != nil && p.UpdateEndedAt == nil
}

// updateOrder is Grove's order of replicas to update: no scheduled pods
// first, then breached ones, then by index.
func updateOrder(a, b rolloutReplica) int {
	if (a.scheduledPods == 0) != (b.scheduledPods == 0) {
		if a.scheduledPods == 0 {
			return -1
		}
		return 1
	}
	if a.breached != b.breached {
		if a.breached {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.index, b.index)
}

// nextGangPods are the old pods of the replica to delete now (see
// decideRollout): none until every PodClique has taken the template, then
// the base gang's, then the scaling-group gangs'.
func nextGangPods(r rolloutReplica) []podstate.Summary {
	for _, c := range r.cliques {
		if !c.specCurrent {
			return nil
		}
	}
	gangs := gangsOf(r)
	if len(gangs) == 0 {
		return nil
	}
	base := gangs[0]
	if old := base.oldPods(); len(old) > 0 {
		return old
	}
	if !base.available(true) {
		return nil
	}
	var unavailable []podstate.Summary
	for _, g := range gangs[1:] {
		if old := g.oldPods(); len(old) > 0 && !g.available(false) {
			unavailable = append(unavailable, old...)
		}
	}
	if len(unavailable) > 0 {
		// Serving nothing: replaced at once, as Grove replaces pending and
		// unavailable scaling-group replicas.
		return unavailable
	}
	for i, g := range gangs[1:] {
		old := g.oldPods()
		if len(old) == 0 {
			continue
		}
		for j, other := range gangs[1:] {
			if j != i && !other.available(false) {
				return nil
			}
		}
		return old
	}
	return nil
}

// replicaUpdated: the replica has all its PodCliques, each carrying its
// template, no old pod that runs, every gang available, and its members
// report it available, so that the next replica's update never starts
// while this one still counts as unavailable.
func replicaUpdated(r rolloutReplica) bool {
	if !r.complete || !r.available || hasOldPods(r) {
		return false
	}
	for _, c := range r.cliques {
		if !c.specCurrent {
			return false
		}
	}
	for _, g := range gangsOf(r) {
		if !g.available(true) {
			return false
		}
	}
	return true
}

// templateTaken: every PodClique of the replicas not being recreated
// carries its template.
func templateTaken(replicas []rolloutReplica) bool {
	for _, r := range replicas {
		if r.recreating {
			continue
		}
		for _, c := range r.cliques {
			if !c.specCurrent {
				return false
			}
		}
	}
	return true
}

func hasOldPods(r rolloutReplica) bool {
	for _, c := range r.cliques {
		if len(c.oldPods) > 0 {
			return true
		}
	}
	return false
}

func replicaByIndex(replicas []rolloutReplica, index int) *rolloutReplica {
	for i := range replicas {
		if replicas[i].index == index {
			return &replicas[i]
		}
	}
	return nil
}

// rolloutGang is the PodCliques of one gang of a replica.
type rolloutGang []rolloutClique

func (g rolloutGang) oldPods() []podstate.Summary {
	var out []podstate.Summary
	for _, c := range g {
		out = append(out, c.oldPods...)
	}
	return out
}

// available: every clique has minAvailable ready pods (with the template's
// hash, when updated).
func (g rolloutGang) available(updated bool) bool {
	for _, c := range g {
		ready := c.ready
		if updated {
			ready = c.readyUpdated
		}
		if ready < c.minAvailable {
			return false
		}
	}
	return true
}

// gangsOf groups the replica's cliques by gang: the base gang first (empty
// when the replica has none), then the scaling-group gangs by group and
// group replica.
func gangsOf(r rolloutReplica) []rolloutGang {
	base := rolloutGang{}
	extra := map[string]rolloutGang{}
	var order []rolloutClique
	for _, c := range r.cliques {
		if c.base {
			base = append(base, c)
			continue
		}
		if _, seen := extra[c.gang]; !seen {
			order = append(order, c)
		}
		extra[c.gang] = append(extra[c.gang], c)
	}
	slices.SortFunc(order, func(a, b rolloutClique) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.groupReplica, b.groupReplica))
	})
	out := []rolloutGang{base}
	for _, c := range order {
		out = append(out, extra[c.gang])
	}
	return out
}

// recreatingReplicas are the replicas with a recreation under way or
// decided this pass.
func recreatingReplicas(inProgress map[int]bool, added []copsev1alpha1.ReplicaRecreation) map[int]bool {
	out := map[int]bool{}
	for r := range inProgress {
		out[r] = true
	}
	for _, rec := range added {
		out[int(rec.ReplicaIndex)] = true
	}
	return out
}

// rolloutInputsOf gathers decideRollout's inputs from this pass's
// observations. recreating holds the replicas with a recreation under way
// or decided this pass.
func rolloutInputsOf(pcs *copsev1alpha1.PodCliqueSet, obs *observed, assessed []replicaAssessment,
	recreating map[int]bool, now time.Time) rolloutInputs {
	return rolloutInputs{
		training:     pcs.IsTraining(),
		onDelete:     pcs.UpdatesOnDelete(),
		suspended:    pcs.IsSuspended(),
		recordedHash: pcs.Status.CurrentGenerationHash,
		computedHash: generationhash.GenerationHash(pcs),
		progress:     pcs.Status.UpdateProgress,
		replicas:     rolloutReplicasOf(pcs, generationhash.PodTemplateHashes(pcs), obs, assessed, recreating),
		now:          now,
	}
}

// rolloutReplicasOf reduces each replica below spec.replicas to its
// current run's PodCliques and pods, with the template hash each should
// carry.
func rolloutReplicasOf(pcs *copsev1alpha1.PodCliqueSet, hashes map[string]string, obs *observed, assessed []replicaAssessment, recreating map[int]bool) []rolloutReplica {
	groupMinAvailable := obs.groupMinAvailable
	out := make([]rolloutReplica, int(pcs.Spec.Replicas))
	for r := range out {
		out[r] = rolloutReplica{index: r, recreating: recreating[r]}
		if r < len(assessed) {
			out[r].breached, out[r].available = assessed[r].breached, assessed[r].available
		}
		for _, pclq := range obs.replicas[r].runs[int(obs.records.Attempt(r))].podCliques {
			if !pclq.DeletionTimestamp.IsZero() {
				continue
			}
			c, scheduled := rolloutCliqueOf(pclq, hashes, groupMinAvailable, obs.podsByClique[pclq.Name])
			out[r].scheduledPods += scheduled
			out[r].cliques = append(out[r].cliques, c)
		}
		out[r].complete = len(out[r].cliques) >= obs.replicas[r].members
	}
	return out
}

// rolloutCliqueOf reduces one PodClique of a replica's current run and its
// pods to what the rollout needs; scheduled counts its pods on nodes.
func rolloutCliqueOf(pclq *copsev1alpha1.PodClique, hashes map[string]string, groupMinAvailable map[string]int32,
	pods []podstate.Summary) (c rolloutClique, scheduled int) {
	expected := hashes[pclq.Labels[labels.CliqueTemplateKey]]
	c = rolloutClique{
		name:         pclq.Name,
		gang:         pclq.Labels[labels.PodGangKey],
		base:         true,
		minAvailable: int(min(pclq.MinAvailable(), pclq.Spec.Replicas)),
		specCurrent:  pclq.Labels[labels.PodTemplateHashKey] == expected,
	}
	if group := pclq.Labels[labels.ScalingGroupKey]; group != "" {
		j, _ := labels.Index(pclq.Labels, labels.ScalingGroupReplicaKey)
		c.group, c.groupReplica, c.base = group, j, int32(j) < groupMinAvailable[group]
	}
	for _, p := range pods {
		if p.ControllerUID != pclq.UID {
			continue
		}
		if p.Scheduled && p.HoldsNode() {
			scheduled++
		}
		if !p.Active() {
			continue
		}
		switch {
		case p.TemplateHash != expected:
			c.oldPods = append(c.oldPods, p)
		case p.Ready:
			c.readyUpdated++
		}
		if p.Ready {
			c.ready++
		}
	}
	return c, scheduled
}
