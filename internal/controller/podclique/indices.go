package podclique

import (
	"cmp"
	"maps"
	"slices"

	"github.com/copse-dev/copse/internal/podstate"
)

// podsToCreate returns the indices at which to create pods so that desired
// indices are occupied: the lowest free ones, so a replaced or scaled-in pod's
// index is reused before the clique grows past it. occupied holds the indices
// of the pods that exist or are being created; duplicates count once.
func podsToCreate(desired int, occupied []int) []int {
	taken := make(map[int]bool, len(occupied))
	for _, i := range occupied {
		taken[i] = true
	}
	missing := desired - len(taken)
	if missing <= 0 {
		return nil
	}
	out := make([]int, 0, missing)
	for i := 0; len(out) < missing; i++ {
		if !taken[i] {
			out = append(out, i)
		}
	}
	return out
}

// podsToDelete picks the surplus pods to remove on scale-in, cheapest loss
// first: pods not scheduled, then pods not ready, then pods of another
// template than templateHash (the PodClique's; "" when it has none), as
// Grove's scale-in prefers outdated pods, then the highest indices, so a
// shrinking clique keeps its lowest, healthiest, newest members.
func podsToDelete(surplus int, candidates []podstate.Summary, templateHash string) []podstate.Summary {
	if surplus <= 0 {
		return nil
	}
	ordered := slices.Clone(candidates)
	slices.SortFunc(ordered, func(a, b podstate.Summary) int {
		if a.Scheduled != b.Scheduled || a.Ready != b.Ready {
			return deleteFirst(a, b)
		}
		if outdatedA, outdatedB := a.TemplateHash != templateHash, b.TemplateHash != templateHash; templateHash != "" && outdatedA != outdatedB {
			return boolFirst(outdatedA, outdatedB)
		}
		return deleteFirst(a, b)
	})
	return ordered[:min(surplus, len(ordered))]
}

// onePodPerIndex keeps the healthiest pod of every index and returns the
// others as extra. Two pods share an index only after an expectation expired
// while the cache still lagged; the extra ones are deleted so that every
// hostname belongs to one pod.
func onePodPerIndex(pods []podstate.Summary) (kept, extra []podstate.Summary) {
	byIndex := map[int][]podstate.Summary{}
	for _, p := range pods {
		byIndex[p.Index] = append(byIndex[p.Index], p)
	}
	for _, index := range slices.Sorted(maps.Keys(byIndex)) {
		same := byIndex[index]
		slices.SortFunc(same, deleteFirst)
		kept = append(kept, same[len(same)-1])
		extra = append(extra, same[:len(same)-1]...)
	}
	return kept, extra
}

// deleteFirst orders pods by how little deleting them costs.
func deleteFirst(a, b podstate.Summary) int {
	if a.Scheduled != b.Scheduled {
		return boolFirst(!a.Scheduled, !b.Scheduled)
	}
	if a.Ready != b.Ready {
		return boolFirst(!a.Ready, !b.Ready)
	}
	if c := cmp.Compare(b.Index, a.Index); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// boolFirst sorts true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}
