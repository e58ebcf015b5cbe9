package resourcesharing

import (
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
)

// Level is the level of the hierarchy a claim belongs to, and so the kind of
// the object that owns it.
type Level string

// Levels, named after the owner's kind.
const (
	LevelPodCliqueSet Level = "PodCliqueSet"
	LevelScalingGroup Level = "PodCliqueScalingGroup"
	LevelPodClique    Level = "PodClique"
)

// Ref is a claim a pod refers to, and the level that owns it.
type Ref struct {
	Name  string
	Level Level
}

// PodPlace is where a pod sits in its PodCliqueSet: what decides the claims
// it gets.
type PodPlace struct {
	// Replica is the PodCliqueSet replica.
	Replica int
	// Clique is the clique's name in the template.
	Clique string
	// PodClique is the PodClique object's name.
	PodClique string
	// ScalingGroup is the PodCliqueScalingGroup object's name; "" for a
	// standalone clique.
	ScalingGroup string
	// GroupReplica is the scaling-group replica of a grouped clique.
	GroupReplica int
	// Index is the pod's index in its PodClique.
	Index int
}

// PodClaims are the claims a pod refers to, in Grove's order: the
// PodCliqueSet's (AllReplicas entries, then this replica's PerReplica ones)
// that its filter lets through to the clique or its scaling group, then the
// scaling group's that its filter lets through to the clique, then the
// clique's own (the PodClique's, then this pod index's). A filter lets
// everything through when it is absent.
func PodClaims(pcs *copsev1alpha1.PodCliqueSet, place PodPlace) []Ref {
	var out []Ref
	matchNames := []string{place.Clique}
	var group *grovecorev1alpha1.PodCliqueScalingGroupConfig
	if place.ScalingGroup != "" {
		if group = ScalingGroupConfig(pcs, place.Replica, place.ScalingGroup); group != nil {
			matchNames = append(matchNames, group.Name)
		}
	}

	var pcsRefs []grovecorev1alpha1.ResourceSharingSpec
	for i := range pcs.Spec.Template.ResourceSharing {
		if ref := &pcs.Spec.Template.ResourceSharing[i]; ref.FilterMatches(matchNames...) {
			pcsRefs = append(pcsRefs, ref.ResourceSharingSpec)
		}
	}
	out = appendRefs(out, pcsRefs, pcs.Name, place.Replica, LevelPodCliqueSet)

	if group != nil {
		var groupRefs []grovecorev1alpha1.ResourceSharingSpec
		for i := range group.ResourceSharing {
			if ref := &group.ResourceSharing[i]; ref.FilterMatches(place.Clique) {
				groupRefs = append(groupRefs, ref.ResourceSharingSpec)
			}
		}
		out = appendRefs(out, groupRefs, place.ScalingGroup, place.GroupReplica, LevelScalingGroup)
	}

	if clique := pcs.CliqueTemplate(place.Clique); clique != nil {
		out = appendRefs(out, clique.ResourceSharing, place.PodClique, place.Index, LevelPodClique)
	}
	return out
}

// appendRefs adds the names of one level's claims: the AllReplicas entries
// first, then the PerReplica ones for index.
func appendRefs(out []Ref, refs []grovecorev1alpha1.ResourceSharingSpec, owner string, index int, level Level) []Ref {
	for _, ref := range refs {
		if ref.Scope == grovecorev1alpha1.ResourceSharingScopeAllReplicas {
			out = append(out, Ref{Name: naming.SharedClaim(owner, ref.Name), Level: level})
		}
	}
	for _, ref := range refs {
		if ref.Scope == grovecorev1alpha1.ResourceSharingScopePerReplica {
			out = append(out, Ref{Name: naming.ReplicaClaim(owner, index, ref.Name), Level: level})
		}
	}
	return out
}

// ScalingGroupConfig is the template's scaling group whose
// PodCliqueScalingGroup in replica is named name; nil when none is. The
// name is generated for each config and compared, never parsed.
func ScalingGroupConfig(pcs *copsev1alpha1.PodCliqueSet, replica int, name string) *grovecorev1alpha1.PodCliqueScalingGroupConfig {
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		group := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		if naming.ScalingGroup(pcs.Name, replica, group.Name) == name {
			return group
		}
	}
	return nil
}

// AddToPod makes a pod use claims, as Grove does: a spec.resourceClaims
// entry per claim, named after the claim, with resourceClaimName set, and
// that entry in resources.claims of every container and init container, so
// that each of them can reach the devices. An entry already there is not
// added twice.
func AddToPod(spec *corev1.PodSpec, refs []Ref) {
	for _, ref := range refs {
		name := ref.Name
		if !slices.ContainsFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == name }) {
			spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &name})
		}
		for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range containers {
				c := &containers[i]
				if !slices.ContainsFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == name }) {
					c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
				}
			}
		}
	}
}
