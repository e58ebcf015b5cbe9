package podclique

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

const (
	planTraining = 1 << iota
	planBlocked
)

// planSeed is a case of TestPlanPods, as FuzzPlanPods takes it.
type planSeed struct {
	desired, minAvailable int
	training, blocked     bool
	pods                  []podstate.Summary
	creating              []int
	deleting, replacing   []types.UID
	recorded              []int
	replacements          int32
	budget                int
}

// planArgs are the arguments of FuzzPlanPods.
type planArgs struct {
	desired, minAvailable int
	flags                 byte
	pods, creating        []byte
	deleting, replacing   uint32
	recorded              []byte
	replacements          int32
	budget                int
}

// args are the fuzz arguments that planInputOf reads back as the seed's
// input (pods as fuzzinput.EncodePods keeps them; UIDs become the UIDs of
// those pods by position).
func (s planSeed) args() planArgs {
	var flags byte
	if s.training {
		flags |= planTraining
	}
	if s.blocked {
		flags |= planBlocked
	}
	positions := func(uids []types.UID) uint32 {
		var mask uint32
		for i, p := range s.pods {
			if slices.Contains(uids, p.UID) {
				mask |= 1 << i
			}
		}
		return mask
	}
	return planArgs{s.desired, s.minAvailable, flags, fuzzinput.EncodePods(s.pods, t0), indexBytes(s.creating),
		positions(s.deleting), positions(s.replacing), indexBytes(s.recorded), s.replacements, s.budget}
}

func indexBytes(indices []int) []byte {
	out := make([]byte, 0, len(indices))
	for _, i := range indices {
		out = append(out, byte(i))
	}
	return out
}

// planInputOf builds a planInput as the reconciler does: desired is a
// clique's replicas (here at most 40), the pods at most 32 with the UIDs
// uid-0..uid-31 by position, deleting and replacing masks over those
// positions, and for Training the succeeded indices are the clique's
// completion from the recorded indices and the pods.
func planInputOf(desired, minAvailable int, flags byte, podBytes, creating []byte, deleting, replacing uint32,
	recorded []byte, replacements int32, budget int) planInput {
	in := planInput{
		desired:      int(uint(desired) % 41),
		minAvailable: minAvailable,
		training:     flags&planTraining != 0,
		blocked:      flags&planBlocked != 0,
		pods:         fuzzinput.New(podBytes).Pods(32, t0),
		deleting:     map[types.UID]bool{},
		replacing:    map[types.UID]bool{},
		replacements: replacements,
		now:          t0,
		budget:       budget,
	}
	for _, b := range creating {
		in.creating = append(in.creating, int(b%64))
	}
	for i, p := range in.pods {
		if deleting&(1<<i) != 0 {
			in.deleting[p.UID] = true
		}
		if replacing&(1<<i) != 0 {
			in.replacing[p.UID] = true
		}
	}
	if in.training {
		record := indexset.Set{}
		for _, b := range recorded {
			record.Add(int(b % 64))
		}
		in.succeeded = lifecycle.CliqueCompletion(in.desired, record.String(), nil, in.pods).Succeeded
	}
	return in
}

// FuzzPlanPods checks planPods on any clique:
//
//   - creations are distinct indices below desired, none of them an index
//     being created, one that exited 0 (Training), or one a pod still holds
//     (for Training any pod not being deleted; for Inference a live pod that
//     the plan does not delete as ended);
//   - each deleted pod is one of the clique's, not already being deleted,
//     deleted once, for a cause that fits it; a Training pod that exited 0
//     is never deleted; scale-in waits for pending creations;
//   - a blocked plan creates nothing and replaces nothing (it only carries
//     out replacements already recorded);
//   - replacements are failed Training pods not yet being replaced; a
//     back-off wait replaces nothing;
//   - the budget holds, and a plan it cut uses all of it;
//   - an uncut, unblocked Inference plan without pending creations leaves
//     exactly desired pods, one per index.
func FuzzPlanPods(f *testing.F) {
	// Cases of TestPlanPods.
	for _, s := range []planSeed{
		{desired: 3},
		{desired: 3, pods: []podstate.Summary{p(0), p(1), p(2, unscheduled)}},
		{desired: 4, pods: []podstate.Summary{p(0)}, creating: []int{1}},
		{desired: 1, pods: []podstate.Summary{p(0), p(1), p(2)}},
		{desired: 1, pods: []podstate.Summary{p(0), p(1)}, creating: []int{2}},
		{desired: 1, pods: []podstate.Summary{p(0), p(1), p(2)}, deleting: []types.UID{"uid-1", "uid-2"}},
		{desired: 2, pods: []podstate.Summary{p(0), p(1, terminating)}},
		{desired: 3, pods: []podstate.Summary{p(0), p(1, failed), p(2)}},
		{desired: 2, pods: []podstate.Summary{p(0), p(1, failed)}, deleting: []types.UID{"uid-1"}, creating: []int{1}},
		{desired: 2, training: true, pods: []podstate.Summary{p(0, succeeded), p(1)}},
		{desired: 3, minAvailable: 2, training: true, pods: []podstate.Summary{p(0, failed, finishedAt(t0.Add(-10*time.Second))), p(1), p(2)}},
		{desired: 3, minAvailable: 2, training: true, replacements: 2, pods: []podstate.Summary{p(0, failed, finishedAt(t0.Add(-30*time.Second))), p(1), p(2)}},
		{desired: 3, minAvailable: 2, training: true, replacing: []types.UID{"uid-0"}, replacements: 1, pods: []podstate.Summary{p(0, failed), p(1), p(2)}},
		{desired: 3, minAvailable: 2, training: true, replacing: []types.UID{"uid-0"}, pods: []podstate.Summary{p(0, failed, terminating), p(1), p(2)}},
		{desired: 4, minAvailable: 2, training: true, pods: []podstate.Summary{p(0, failed, finishedAt(t0.Add(-time.Minute))), p(1, succeeded), p(2), p(3, notReady)}},
		{desired: 2, training: true, pods: []podstate.Summary{p(0, named("done"), succeeded), p(0, named("rerun")), p(1)}},
		{desired: 1, training: true, pods: []podstate.Summary{p(0, succeeded), p(1), p(2, unscheduled)}},
		{desired: 3, training: true, recorded: []int{0, 2}, pods: []podstate.Summary{p(1)}},
		{desired: 2, training: true, recorded: []int{0}, pods: []podstate.Summary{p(0, named("rerun")), p(1)}},
		{desired: 5, budget: 3},
		{desired: 2, budget: 1, pods: []podstate.Summary{p(0, failed), p(1, failed)}},
		{desired: 3, minAvailable: 1, training: true, blocked: true, pods: []podstate.Summary{p(0, failed), p(1), p(2)}},
		{desired: 1, training: true, blocked: true, pods: []podstate.Summary{p(0), p(1), p(1, named("dup"), notReady), p(0, named("x"), noIndex)}},
		{desired: 3, pods: []podstate.Summary{p(0), p(1, named("a")), p(1, named("b"), notReady)}},
		{desired: 1, pods: []podstate.Summary{p(0), p(1), p(2, failed)}},
		{desired: 0, pods: []podstate.Summary{p(0), p(1, gated)}},
	} {
		if s.minAvailable == 0 {
			s.minAvailable = s.desired
		}
		a := s.args()
		f.Add(a.desired, a.minAvailable, a.flags, a.pods, a.creating, a.deleting, a.replacing, a.recorded, a.replacements, a.budget)
	}
	f.Fuzz(func(t *testing.T, desired, minAvailable int, flags byte, podBytes, creating []byte, deleting, replacing uint32,
		recorded []byte, replacements int32, budget int) {
		in := planInputOf(desired, minAvailable, flags, podBytes, creating, deleting, replacing, recorded, replacements, budget)
		plan := planPods(in)

		if budget > 0 && len(plan.create)+len(plan.delete) > budget {
			t.Fatalf("%d creations and %d deletions exceed the budget of %d", len(plan.create), len(plan.delete), budget)
		}
		if plan.truncated && (budget <= 0 || len(plan.create)+len(plan.delete) != budget) {
			t.Fatalf("a cut plan of %d creations and %d deletions for a budget of %d", len(plan.create), len(plan.delete), budget)
		}

		byUID := map[types.UID]podstate.Summary{}
		for _, p := range in.pods {
			byUID[p.UID] = p
		}
		deleted := map[types.UID]deletionCause{}
		for _, d := range plan.delete {
			p, known := byUID[d.pod.UID]
			if _, twice := deleted[d.pod.UID]; !known || twice || in.deleting[d.pod.UID] {
				t.Fatalf("deletion of %s (%s): a pod of the clique %v, deleted twice %v, already being deleted %v",
					d.pod.Name, d.cause, known, twice, in.deleting[d.pod.UID])
			}
			deleted[d.pod.UID] = d.cause
			if in.training && p.Succeeded() {
				t.Fatalf("Training pod %s, which exited 0, is deleted (%s)", p.Name, d.cause)
			}
			fits := map[deletionCause]bool{
				causeEnded:          !in.training && !in.blocked && p.Terminal(),
				causeReplaced:       in.training && p.Failed() && (in.replacing[p.UID] || (!in.blocked && slices.ContainsFunc(plan.replace, samePod(p)))),
				causeNoIndex:        !p.HasIndex,
				causeDuplicateIndex: p.HasIndex,
				causeScaleIn:        p.HasIndex && len(in.creating) == 0,
			}
			if !fits[d.cause] {
				t.Fatalf("pod %+v is deleted for a cause that does not fit: %s", p, d.cause)
			}
		}

		if in.blocked && (len(plan.create) > 0 || len(plan.replace) > 0) {
			t.Fatalf("a blocked plan creates %v and replaces %v", plan.create, podNames(plan.replace))
		}
		for _, p := range plan.replace {
			if !in.training || !p.Failed() || in.replacing[p.UID] || p.Terminating || in.deleting[p.UID] {
				t.Fatalf("replacement of %+v", p)
			}
		}
		if !plan.retryAt.IsZero() && (len(plan.replace) > 0 || !plan.retryAt.After(in.now)) {
			t.Fatalf("retry at %v, now %v, while replacing %v", plan.retryAt, in.now, podNames(plan.replace))
		}

		held := map[int]bool{}
		for _, p := range in.pods {
			switch {
			case !p.HasIndex || in.deleting[p.UID]:
			case in.training:
				held[p.Index] = true
			case !p.Terminating && deleted[p.UID] != causeEnded:
				held[p.Index] = true
			}
		}
		for i, index := range plan.create {
			switch {
			case index < 0 || index >= in.desired:
				t.Fatalf("creation at %d outside [0, %d)", index, in.desired)
			case slices.Contains(plan.create[:i], index) || slices.Contains(in.creating, index):
				t.Fatalf("index %d created twice: creations %v, pending %v", index, plan.create, in.creating)
			case in.training && in.succeeded.Has(index):
				t.Fatalf("index %d, which exited 0, gets a new pod", index)
			case held[index]:
				t.Fatalf("index %d, which a pod holds, gets a new pod", index)
			}
		}

		if in.training || in.blocked || plan.truncated || len(in.creating) > 0 {
			return
		}
		indices := slices.Clone(plan.create)
		for _, p := range in.pods {
			if _, gone := deleted[p.UID]; !gone && !in.deleting[p.UID] && !p.Terminating {
				indices = append(indices, p.Index)
			}
		}
		slices.Sort(indices)
		if len(indices) != in.desired || len(slices.Compact(indices)) != in.desired {
			t.Fatalf("after the plan the clique of %d has pods at %v", in.desired, indices)
		}
	})
}

func samePod(p podstate.Summary) func(podstate.Summary) bool {
	return func(q podstate.Summary) bool { return q.UID == p.UID }
}
