package blueprint

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/mnnvl"
)

// MNNVLClaim is the pod decorator of MNNVL (added when the operator
// configuration's mnnvl.enabled is on): a pod whose containers request GPUs
// gets the channel claim of its replica's ComputeDomain for its clique's
// MNNVL group, on each GPU container. The group is the PodClique's
// grove.io/mnnvl-group annotation, which the PodClique's creator resolved
// from the PodCliqueSet (PodCliqueMNNVLGroup); a PodClique without it takes
// the group the PodCliqueSet gives its clique now. Cliques without a group
// or opted out, and CPU pods, are left alone.
func MNNVLClaim() PodDecorator {
	return PodDecorator{Name: "mnnvl", Decorate: addMNNVLClaim}
}

func addMNNVLClaim(pod *corev1.Pod, pc PodContext) error {
	group, ok := pc.PodClique.Annotations[mnnvl.GroupAnnotation]
	if !ok {
		group = mnnvl.CliqueGroup(pc.PodCliqueSet, pc.Identity.Clique)
	}
	if !mnnvl.TakesPart(group) {
		return nil
	}
	mnnvl.AddClaim(&pod.Spec, mnnvl.ComputeDomainName(pc.Identity.PodCliqueSet, pc.Identity.Replica, group))
	return nil
}
