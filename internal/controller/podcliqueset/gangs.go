package podcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
)

// gangFacts is what the PodGangsScheduled verdict and the bound on an
// incomplete placement need of one gang of a replica's current run, as
// plain values. A PodGroup has one minCount over all of its cliques, so
// whether the gang is placed, and whether each clique got its minAvailable,
// are read from the run's own pods.
type gangFacts struct {
	name    string
	replica int
	// minCount is the PodGroup's gang minCount (at least 1).
	minCount int
	// verdict is the PodGroup's PodGroupInitiallyScheduled condition when
	// it speaks for the current run: nil when there is none yet, or when it
	// is older than the run (a PodGroup a suspension kept; the scheduler
	// gives a PodGroup that verdict once).
	verdict *metav1.Condition
	// placed counts the member cliques' indices placed in this run (a pod
	// on a node or ended, or an index that exited 0); placedAt is when the
	// latest of their pods was placed.
	placed   int
	placedAt time.Time
	// unschedulable is one of its pods' scheduler message, "" if none.
	unschedulable string
	// short describes each member clique placed below its minAvailable,
	// e.g. "job-0-leader (0 of minAvailable 1 placed)".
	short []string
	// after is the base gang a scaled gang is placed after: its pods are
	// held in that gang's domain (blueprint.HeldToBaseGang), so the
	// scheduler finds no node for them until the base gang is placed. ""
	// for other gangs.
	after string
}

// isPlaced: minCount of the gang's pods are on nodes (or ran).
func (g gangFacts) isPlaced() bool { return g.placed >= g.minCount }

// incomplete: placed, but some clique has fewer pods placed than its
// minAvailable (the scheduler filled minCount with the other cliques).
func (g gangFacts) incomplete() bool { return g.isPlaced() && len(g.short) > 0 }

// gangFactsOf gathers the gangs of the replicas' current runs: the gang
// PodGroups of replicas that are not being recreated, with their member
// PodCliques (labelled with the gang) and their pods of the current
// attempt. None while the workload is suspended: there is no run to place.
func gangFactsOf(pcs *copsev1alpha1.PodCliqueSet, obs *observed, gangKind string, inProgress map[int]bool) []gangFacts {
	if gangKind == "" || pcs.IsSuspended() {
		return nil
	}
	var out []gangFacts
	for replica := range int(pcs.Spec.Replicas) {
		if inProgress[replica] {
			continue
		}
		attempt := int(obs.records.Attempt(replica))
		for _, obj := range obs.replica(replica).byKind[gangKind] {
			pg, ok := obj.(*schedulingv1beta1.PodGroup)
			if !ok || pg.Spec.SchedulingPolicy.Gang == nil || !pg.DeletionTimestamp.IsZero() {
				continue
			}
			out = append(out, gangFactsOfGroup(pcs, obs, pg, replica, attempt))
		}
	}
	return out
}

// gangFactsOfGroup gathers one gang PodGroup's facts from its member
// PodCliques of the replica's current run (attempt) and their pods.
func gangFactsOfGroup(pcs *copsev1alpha1.PodCliqueSet, obs *observed, pg *schedulingv1beta1.PodGroup, replica, attempt int) gangFacts {
	g := gangFacts{name: pg.Name, replica: replica, minCount: max(int(pg.Spec.SchedulingPolicy.Gang.MinCount), 1)}
	if ref := pg.Spec.WorkloadRef; ref != nil && blueprint.HeldToBaseGang(obs.packing, ref.TemplateName) {
		g.after = naming.BaseGang(pcs.Name, replica)
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled); c != nil &&
		!c.LastTransitionTime.Time.Before(runStart(pcs, replica)) {
		g.verdict = c
	}
	for _, pclq := range obs.replica(replica).run(attempt).podCliques {
		if pclq.Labels[labels.PodGangKey] != pg.Name || !pclq.DeletionTimestamp.IsZero() {
			continue
		}
		placed := lifecycle.RecordedSucceeded(pclq)
		for _, p := range obs.podsByClique[pclq.Name] {
			if p.ControllerUID != pclq.UID || p.Attempt != attempt {
				continue
			}
			if p.Unschedulable != "" && g.unschedulable == "" {
				g.unschedulable = p.Unschedulable
			}
			if !p.Scheduled && !p.Terminal() {
				continue
			}
			if p.HasIndex {
				placed.Add(p.Index)
			}
			if p.ScheduledAt.After(g.placedAt) {
				g.placedAt = p.ScheduledAt
			}
		}
		g.placed += len(placed)
		if need := int(pclq.MinAvailable()); len(placed) < need {
			g.short = append(g.short, fmt.Sprintf("%s (%d of minAvailable %d placed)", pclq.Name, len(placed), need))
		}
	}
	if g.placedAt.IsZero() && g.verdict != nil && g.verdict.Status == metav1.ConditionTrue {
		g.placedAt = g.verdict.LastTransitionTime.Time
	}
	return g
}

// recordedSucceededIndexes are the indices a Training PodClique recorded

// runStart is when the replica's current run began: its latest recreation's
// completion, or the resume after a suspension, whichever is later; zero
// for a first run.
func runStart(pcs *copsev1alpha1.PodCliqueSet, replica int) time.Time {
	start := resumedAt(pcs)
	for _, rec := range pcs.Status.ReplicaRecreations {
		if int(rec.ReplicaIndex) == replica && rec.CompletedAt != nil && rec.CompletedAt.After(start) {
			start = rec.CompletedAt.Time
		}
	}
	return start
}

// gangsScheduledCondition is PodGangsScheduled, from the gangs of the
// replicas' current runs: False (Unschedulable) naming each gang the
// scheduler cannot place, with its message; False (GangPlacedIncomplete)
// naming each gang placed with a clique below its minAvailable, and when
// its pods are recreated (after timeout); True once every gang was placed
// whole; Unknown while some wait for a verdict, or for their base gang to be
// placed first (a scaled gang held in its domain, whose pods no node can
// take until then). Nil when there is no gang.
func gangsScheduledCondition(pcs *copsev1alpha1.PodCliqueSet, gangs []gangFacts, timeout time.Duration, now time.Time) *metav1.Condition {
	if len(gangs) == 0 {
		return nil
	}
	placedGang := map[string]bool{}
	for _, g := range gangs {
		placedGang[g.name] = g.isPlaced()
	}
	var placed int
	var unplaced, incomplete, pending []string
	for _, g := range gangs {
		switch {
		case g.incomplete():
			incomplete = append(incomplete, fmt.Sprintf("%s, placed without enough pods of %s; its pods are recreated at %s unless they are placed by then",
				g.name, nameSome(g.short, ", "), g.placedAt.Add(timeout).UTC().Format(time.RFC3339)))
		case g.isPlaced():
			placed++
		case g.after != "" && !placedGang[g.after]:
			pending = append(pending, fmt.Sprintf("%s (after its base gang %s, in whose domain it is held)", g.name, g.after))
		case g.verdict != nil && g.verdict.Status == metav1.ConditionFalse:
			unplaced = append(unplaced, fmt.Sprintf("%s (%s: %s)", g.name, g.verdict.Reason, trimMessage(g.verdict.Message)))
		case g.unschedulable != "":
			unplaced = append(unplaced, fmt.Sprintf("%s (Unschedulable: %s)", g.name, trimMessage(g.unschedulable)))
		default:
			pending = append(pending, g.name)
		}
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypePodGangsScheduled, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case len(unplaced) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonGangUnschedulable
		cond.Message = fmt.Sprintf("the scheduler cannot place %d of %d gangs: %s", len(unplaced), len(gangs), nameSome(unplaced, "; "))
		if len(incomplete) > 0 {
			cond.Message += fmt.Sprintf("; %d placed incomplete: %s", len(incomplete), nameSome(incomplete, "; "))
		}
	case len(incomplete) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonGangPlacedIncomplete
		cond.Message = fmt.Sprintf("%d of %d gangs hold nodes without a whole placement: %s", len(incomplete), len(gangs), nameSome(incomplete, "; "))
	case len(pending) > 0:
		cond.Status, cond.Reason = metav1.ConditionUnknown, copsev1alpha1.ReasonGangsPending
		cond.Message = fmt.Sprintf("%d of %d gangs placed; waiting for the scheduler to place %s", placed, len(gangs), nameSome(pending, ", "))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, copsev1alpha1.ReasonAllGangsScheduled
		cond.Message = fmt.Sprintf("all %d gangs were placed", len(gangs))
	}
	return &cond
}

// placementDecision is which replicas to recreate for a placement that
// stayed incomplete, and when to look again for one that has not yet.
type placementDecision struct {
	recreate     []int
	requeueAfter time.Duration
}

// decideIncompletePlacements picks the replicas with a gang placed
// incomplete for timeout or longer (since its latest pod was placed): their
// pods hold nodes for a gang that cannot run, so the replica is recreated,
// without consuming a restart, and placed again. skip holds the replicas
// that take no such decision (being recreated, succeeded, decided otherwise
// this pass, or replaced by a rolling update).
func decideIncompletePlacements(gangs []gangFacts, skip map[int]bool, timeout time.Duration, now time.Time) placementDecision {
	var d placementDecision
	seen := map[int]bool{}
	for _, g := range gangs {
		if !g.incomplete() || skip[g.replica] || seen[g.replica] {
			continue
		}
		remaining := g.placedAt.Add(timeout).Sub(now)
		if remaining <= 0 {
			seen[g.replica] = true
			d.recreate = append(d.recreate, g.replica)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	return d
}

// decidePlacement is decideIncompletePlacements for pcs in this pass: no
// replica of an ended workload, none being recreated or decided otherwise
// this pass, none that succeeded, and not the replica a rolling update is
// replacing.
func decidePlacement(pcs *copsev1alpha1.PodCliqueSet, gangs []gangFacts, replicas []replicaAssessment, inProgress map[int]bool,
	d passDecision, timeout time.Duration, now time.Time) placementDecision {
	if timeout <= 0 || d.ended || d.failReason != "" {
		return placementDecision{}
	}
	skip := maps.Clone(inProgress)
	if skip == nil {
		skip = map[int]bool{}
	}
	for _, r := range slices.Concat(d.recreate, d.recreateUncounted) {
		skip[r] = true
	}
	for _, a := range replicas {
		if a.succeeded {
			skip[a.index] = true
		}
	}
	if p := pcs.Status.UpdateProgress; rollingUpdateInProgress(p) && len(p.CurrentlyUpdating) > 0 {
		skip[int(p.CurrentlyUpdating[0].ReplicaIndex)] = true
	}
	return decideIncompletePlacements(gangs, skip, timeout, now)
}
