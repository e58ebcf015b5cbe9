package podclique

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// deletionCause says why a pod is deleted; it appears in logs and events.
type deletionCause string

const (
	causeScaleIn        deletionCause = "scale-in"
	causeEnded          deletionCause = "ended"
	causeReplaced       deletionCause = "replaced"
	causeDuplicateIndex deletionCause = "duplicate-index"
	causeNoIndex        deletionCause = "no-index"
	// causeNotAdoptable: a pod a restart in place kept that the new run's
	// PodClique cannot take (adoptionOf).
	causeNotAdoptable deletionCause = "not-adoptable"
)

type podDeletion struct {
	pod   podstate.Summary
	cause deletionCause
}

// podPlan is what one reconcile does to the clique's pods.
type podPlan struct {
	// create are the indices of the pods to create.
	create []int
	// delete are the pods to delete, with the reason for each.
	delete []podDeletion
	// replace are the failed Training pods whose replacement this pass
	// decides. They are recorded in status (podReplacements, replacingPods)
	// before anything is deleted, so each is counted exactly once.
	replace []podstate.Summary
	// retryAt is when a replacement back-off ends; zero when none waits.
	retryAt time.Time
	// truncated: the budget cut the plan short; the rest is for the next
	// pass, which starts from fresh observations.
	truncated bool
}

// planInput is everything planPods decides from.
type planInput struct {
	desired      int
	minAvailable int
	training     bool
	// templateHash is the PodClique's pod template hash: scale-in removes
	// pods of other templates first.
	templateHash string
	// blocked forbids new pods: no index is filled and no ended pod is
	// replaced. Deletions that keep the clique in shape (a second pod on an
	// index, a pod without an index, scale-in) still happen.
	blocked bool
	// pods are the clique's pods as the cache shows them.
	pods []podstate.Summary
	// creating are the indices of pods this controller created that the
	// cache does not show yet; they count as existing.
	creating []int
	// deleting are the pods this controller deleted that the cache still
	// shows alive; they count as gone.
	deleting map[types.UID]bool
	// vacating are the indices of pods a restart in place kept that this
	// clique discards (adoptionOf): no new pod takes such an index while the
	// discarded pod, which has its hostname, still exists.
	vacating []int
	// Training only: succeeded are the indices that exited 0 (recorded or
	// shown by pods); replacing are the failed pods whose replacement is
	// recorded; replacements is status.podReplacements.
	succeeded indexset.Set
	replacing map[types.UID]bool
	// ignored are the failed pods a failure rule ignores (Training): they
	// are replaced whether or not the clique can do without them.
	ignored      map[types.UID]bool
	replacements int32
	now          time.Time
	// budget is how many pods this pass may create and delete in all.
	budget int
}

// planPods decides which pods to create and delete.
//
// Pods being deleted by this controller no longer count. For Inference, as
// in Grove, neither do terminating pods, and every ended pod is replaced at
// once: it is deleted and its index is free again in the same plan. The
// remaining pods hold one index each (extra pods on one index, and pods
// without a valid index, are deleted). Free indices are filled lowest first
// up to the desired count. A blocked plan creates nothing and replaces
// nothing.
//
// For Training, one index never has two pods at a time: a pod holds its
// index until it is gone, terminating or not, so a hostname never resolves
// to two runs. An index that exited 0 is done for good (it is never filled
// again, even once its pod is gone), and its pod is never deleted. A failed
// pod that the clique can do without (replacementDecision), or that a
// failure rule ignores, is replaced once
// the back-off since the latest such failure has passed
// (lifecycle.ReplacementBackoff of the replacements so far); all failed pods
// due are replaced together.
//
// Scale-in waits while creations are pending: until the cache shows the new
// pods, the planner cannot choose among them, and choosing only among the
// visible ones would remove the wrong pods.
func planPods(in planInput) podPlan {
	var plan podPlan
	var live []podstate.Summary
	for _, p := range in.pods {
		if in.deleting[p.UID] || (!in.training && p.Terminating) {
			continue
		}
		live = append(live, p)
	}

	done := indexset.Set{}
	succeededCount := 0
	if in.training {
		done = in.succeeded
		succeededCount = in.succeeded.CountBelow(in.desired)
	}
	available := lifecycle.CountPods(live, in.training, succeededCount, union(in.replacing, in.ignored)).Healthy(in.training) >= in.minAvailable

	var occupants, held, dueForReplacement []podstate.Summary
	for _, p := range live {
		switch {
		case in.training && p.Succeeded():
			held = append(held, p)
		case in.training && p.Failed() && in.replacing[p.UID]:
			held = append(held, p)
			if !p.Terminating {
				plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeReplaced})
			}
		case in.training && p.Terminating:
			held = append(held, p)
		case !in.blocked && replacementDecision(in.training, p, available || in.ignored[p.UID]) == replacePod:
			if in.training {
				held = append(held, p)
				dueForReplacement = append(dueForReplacement, p)
				continue
			}
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeEnded})
		case !p.HasIndex:
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeNoIndex})
		default:
			occupants = append(occupants, p)
		}
	}
	if len(dueForReplacement) > 0 {
		due := latestFinish(dueForReplacement, in.now).Add(lifecycle.ReplacementBackoff(in.replacements))
		if in.now.Before(due) {
			plan.retryAt = due
		} else {
			plan.replace = dueForReplacement
			for _, p := range dueForReplacement {
				plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeReplaced})
			}
		}
	}

	var contenders []podstate.Summary
	for _, p := range occupants {
		if done.Has(p.Index) {
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeDuplicateIndex})
			continue
		}
		contenders = append(contenders, p)
	}
	kept, extra := onePodPerIndex(contenders)
	for _, p := range extra {
		plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeDuplicateIndex})
	}

	if !in.blocked {
		occupied := make([]int, 0, len(kept)+len(held)+len(done)+len(in.creating))
		for _, p := range kept {
			occupied = append(occupied, p.Index)
		}
		for _, p := range held {
			if p.HasIndex {
				occupied = append(occupied, p.Index)
			}
		}
		for index := range done {
			occupied = append(occupied, index)
		}
		occupied = append(occupied, in.creating...)
		occupied = append(occupied, in.vacating...)
		plan.create = podsToCreate(in.desired, occupied)
	}

	if len(in.creating) == 0 {
		for _, p := range podsToDelete(len(kept)+succeededCount-in.desired, kept, in.templateHash) {
			plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeScaleIn})
		}
	}
	return withinBudget(plan, in.budget)
}

// withinBudget cuts the plan to budget writes, deletions first: they free
// indices and resources. A budget of 0 or less means no limit.
func withinBudget(plan podPlan, budget int) podPlan {
	if budget <= 0 || len(plan.delete)+len(plan.create) <= budget {
		return plan
	}
	plan.truncated = true
	if len(plan.delete) >= budget {
		plan.delete, plan.create = plan.delete[:budget], nil
		return plan
	}
	plan.create = plan.create[:budget-len(plan.delete)]
	return plan
}

// latestFinish is the latest finish time among pods; a pod whose finish
// time is unknown counts as finishing now.
func latestFinish(pods []podstate.Summary, now time.Time) time.Time {
	var latest time.Time
	for _, p := range pods {
		at := p.FinishedAt
		if at.IsZero() {
			at = now
		}
		if at.After(latest) {
			latest = at
		}
	}
	return latest
}

// planInput is what planPods decides from: the observed pods, the
// PodClique's records and whether a cause holds the plan.
func (o *observation) planInput(pclq *copsev1alpha1.PodClique, now time.Time, budget int) planInput {
	return planInput{
		desired:      int(pclq.Spec.Replicas),
		minAvailable: int(pclq.MinAvailable()),
		training:     o.workload.training(),
		templateHash: pclq.Labels[labels.PodTemplateHashKey],
		blocked:      o.creation.planHeld(),
		pods:         o.owned,
		creating:     o.creating,
		deleting:     o.deleting,
		vacating:     indicesOf(o.discard),
		succeeded:    o.completion.Succeeded,
		replacing:    uidSet(pclq.Status.ReplacingPods),
		ignored:      o.ignored,
		replacements: pclq.Status.PodReplacements,
		now:          now,
		budget:       budget,
	}
}

// indicesOf are the pod indices of pods, those without one left out.
func indicesOf(pods []podstate.Summary) []int {
	var out []int
	for _, p := range pods {
		if p.HasIndex {
			out = append(out, p.Index)
		}
	}
	return out
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		out[uid] = true
	}
	return out
}

// recordedSucceeded parses the written succeededIndexes; a malformed record
