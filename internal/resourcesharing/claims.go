package resourcesharing

import (
	"strconv"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// PodCliqueSetShared are the claims of the PodCliqueSet's entries with scope
// AllReplicas: one each, shared by every replica. Entries whose template is
// not resolved (Resolve) are left out until it is.
func PodCliqueSetShared(pcs *copsev1alpha1.PodCliqueSet, external External) []*resourcev1.ResourceClaim {
	return shared(pcs, pcs.Name, pcsRefs(pcs), baseLabels(pcs), external)
}

// PodCliqueSetReplica are the claims of the PodCliqueSet's entries with
// scope PerReplica for one PodCliqueSet replica, labelled with its index.
func PodCliqueSetReplica(pcs *copsev1alpha1.PodCliqueSet, replica int, external External) []*resourcev1.ResourceClaim {
	return perReplica(pcs, pcs.Name, pcsRefs(pcs), replica, baseLabels(pcs), labels.ReplicaKey, external)
}

// ScalingGroupShared are the claims of a scaling group's AllReplicas
// entries for its PodCliqueScalingGroup object named name: one each, shared
// by the group's replicas. They carry the object's name
// (grove.io/podcliquescalinggroup).
func ScalingGroupShared(pcs *copsev1alpha1.PodCliqueSet, group *grovecorev1alpha1.PodCliqueScalingGroupConfig, name string,
	external External) []*resourcev1.ResourceClaim {
	return shared(pcs, name, groupRefs(group), groupLabels(pcs, name), external)
}

// ScalingGroupReplica are the claims of a scaling group's PerReplica
// entries for group replica j of its PodCliqueScalingGroup object named
// name, labelled with the object's name and j.
func ScalingGroupReplica(pcs *copsev1alpha1.PodCliqueSet, group *grovecorev1alpha1.PodCliqueScalingGroupConfig, name string, j int,
	external External) []*resourcev1.ResourceClaim {
	return perReplica(pcs, name, groupRefs(group), j, groupLabels(pcs, name), labels.ScalingGroupReplicaKey, external)
}

// PodCliqueShared are the claims of a clique's AllReplicas entries for its
// PodClique object named name: one each, shared by its pods. They carry the
// object's name (grove.io/podclique).
func PodCliqueShared(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec, name string,
	external External) []*resourcev1.ResourceClaim {
	return shared(pcs, name, clique.ResourceSharing, cliqueLabels(pcs, name), external)
}

// PodCliqueReplica are the claims of a clique's PerReplica entries for the
// pod of index i of its PodClique object named name, labelled with the
// object's name and i.
func PodCliqueReplica(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec, name string, i int,
	external External) []*resourcev1.ResourceClaim {
	return perReplica(pcs, name, clique.ResourceSharing, i, cliqueLabels(pcs, name), labels.PodIndexKey, external)
}

func groupRefs(group *grovecorev1alpha1.PodCliqueScalingGroupConfig) []grovecorev1alpha1.ResourceSharingSpec {
	refs := make([]grovecorev1alpha1.ResourceSharingSpec, 0, len(group.ResourceSharing))
	for _, ref := range group.ResourceSharing {
		refs = append(refs, ref.ResourceSharingSpec)
	}
	return refs
}

func groupLabels(pcs *copsev1alpha1.PodCliqueSet, name string) map[string]string {
	return labels.Merge(baseLabels(pcs), map[string]string{labels.ScalingGroupKey: name})
}

func cliqueLabels(pcs *copsev1alpha1.PodCliqueSet, name string) map[string]string {
	return labels.Merge(baseLabels(pcs), map[string]string{labels.PodCliqueKey: name})
}

func shared(pcs *copsev1alpha1.PodCliqueSet, owner string, refs []grovecorev1alpha1.ResourceSharingSpec, objLabels map[string]string,
	external External) []*resourcev1.ResourceClaim {
	var out []*resourcev1.ResourceClaim
	for _, ref := range refs {
		if ref.Scope != grovecorev1alpha1.ResourceSharingScopeAllReplicas {
			continue
		}
		if spec, ok := Resolve(pcs, ref, external); ok {
			out = append(out, claim(pcs.Namespace, naming.SharedClaim(owner, ref.Name), objLabels, spec))
		}
	}
	return out
}

func perReplica(pcs *copsev1alpha1.PodCliqueSet, owner string, refs []grovecorev1alpha1.ResourceSharingSpec, index int,
	objLabels map[string]string, indexKey string, external External) []*resourcev1.ResourceClaim {
	var out []*resourcev1.ResourceClaim
	for _, ref := range refs {
		if ref.Scope != grovecorev1alpha1.ResourceSharingScopePerReplica {
			continue
		}
		if spec, ok := Resolve(pcs, ref, external); ok {
			out = append(out, claim(pcs.Namespace, naming.ReplicaClaim(owner, index, ref.Name),
				labels.Merge(objLabels, map[string]string{indexKey: strconv.Itoa(index)}), spec))
		}
	}
	return out
}

// claim is a ResourceClaim with the template's spec; the template's own
// metadata is not copied, as in Grove. The spec is immutable, so a claim is
// never updated once created.
func claim(namespace, name string, objLabels map[string]string, spec resourcev1.ResourceClaimSpec) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels.Merge(objLabels)},
		Spec:       *spec.DeepCopy(),
	}
}

// baseLabels are Grove's labels of every claim of a PodCliqueSet.
func baseLabels(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	return labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ComponentKey: labels.ComponentResourceClaim})
}

func pcsRefs(pcs *copsev1alpha1.PodCliqueSet) []grovecorev1alpha1.ResourceSharingSpec {
	refs := make([]grovecorev1alpha1.ResourceSharingSpec, 0, len(pcs.Spec.Template.ResourceSharing))
	for _, ref := range pcs.Spec.Template.ResourceSharing {
		refs = append(refs, ref.ResourceSharingSpec)
	}
	return refs
}
