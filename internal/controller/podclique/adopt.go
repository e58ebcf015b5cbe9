package podclique

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

// adoptionOf sorts the strays of a PodClique whose replica restarted in
// place (inPlace): the pods the restart kept, which the PodCliqueSet
// controller moved to this run's attempt without a controller, are adopted,
// one per index below spec.replicas that no pod of its own holds; the kept
// pods it cannot take are discarded (deleted), so none is left without an
// owner. A kept pod that ended (or is being deleted) before it was adopted
// is discarded too: its containers ran the previous attempt's workload, so
// neither its exit 0 nor its failure is this run's, and a new pod takes its
// index once it is gone (planInput.vacating). adopt are summarised as they
// will be once adopted. rest are the strays left, whose outcome finalizers
// are released as before.
func adoptionOf(pclq *copsev1alpha1.PodClique, attempt int, inPlace bool, owned, strays []podstate.Summary) (adopt, discard, rest []podstate.Summary) {
	if !inPlace {
		return nil, nil, strays
	}
	taken := map[int]bool{}
	for _, p := range owned {
		if p.HasIndex && !p.Terminal() {
			taken[p.Index] = true
		}
	}
	for _, p := range strays {
		kept := p.ControllerUID == "" && p.Attempt == attempt
		switch {
		case !kept:
			rest = append(rest, p)
		case !p.Active() || !p.HasIndex || p.Index >= int(pclq.Spec.Replicas) || taken[p.Index]:
			discard = append(discard, p)
		default:
			taken[p.Index] = true
			p.ControllerUID = pclq.UID
			adopt = append(adopt, p)
		}
	}
	return adopt, discard, rest
}
