package blueprint

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/resourcesharing"
)

// SharedClaims is the pod decorator of resourceSharing: a pod refers, by
// resourceClaimName, to the claims of the PodCliqueSet, its scaling group
// and its clique that reach it (resourcesharing.PodClaims), on every
// container and init container, as Grove injects them. It runs before
// copse's own init container is added, which, as in Grove, gets none.
func SharedClaims() PodDecorator {
	return PodDecorator{Name: "resource-sharing", Decorate: addSharedClaims}
}

func addSharedClaims(pod *corev1.Pod, pc PodContext) error {
	resourcesharing.AddToPod(&pod.Spec, resourcesharing.PodClaims(pc.PodCliqueSet, PodPlaceOf(pc)))
	return nil
}

// PodPlaceOf is where the pod of pc sits, for resourcesharing.
func PodPlaceOf(pc PodContext) resourcesharing.PodPlace {
	return resourcesharing.PodPlace{
		Replica:      pc.Identity.Replica,
		Clique:       pc.Identity.Clique,
		PodClique:    pc.PodClique.Name,
		ScalingGroup: pc.Identity.ScalingGroup,
		GroupReplica: pc.Identity.ScalingGroupReplica,
		Index:        pc.Index,
	}
}
