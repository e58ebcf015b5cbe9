package podcliqueset

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// validateScalingGroups checks the scaling groups: their names, their
// members, and their replica bounds. Unset replicas and minAvailable count
// as 1, their default.
func validateScalingGroups(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	groups := pcs.Spec.Template.PodCliqueScalingGroupConfigs
	cliqueExists := map[string]bool{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			cliqueExists[clique.Name] = true
		}
	}
	// memberOf records, for each clique already claimed, the group index.
	memberOf := map[string]int{}
	var errs field.ErrorList
	names := make([]string, len(groups))
	for g := range groups {
		group := &groups[g]
		path := groupsPath.Index(g)
		names[g] = group.Name
		errs = append(errs, rules.DNSLabel(group.Name, path.Child("name"))...)

		membersPath := path.Child("cliqueNames")
		if len(group.CliqueNames) == 0 {
			errs = append(errs, field.Required(membersPath, "a scaling group needs at least one clique"))
		}
		for k, clique := range group.CliqueNames {
			memberPath := membersPath.Index(k)
			owner, claimed := memberOf[clique]
			switch {
			case !cliqueExists[clique]:
				errs = append(errs, field.Invalid(memberPath, clique, fmt.Sprintf("must name a clique of %s", cliquesPath)))
			case claimed && owner == g:
				errs = append(errs, field.Duplicate(memberPath, clique))
			case claimed:
				errs = append(errs, field.Invalid(memberPath, clique, fmt.Sprintf(
					"clique already belongs to %s (%q); a clique can be in at most one scaling group", groupsPath.Index(owner), groups[owner].Name)))
			default:
				memberOf[clique] = g
			}
		}

		replicasPath, minAvailablePath := path.Child("replicas"), path.Child("minAvailable")
		replicas := copsev1alpha1.ScalingGroupReplicas(*group)
		errs = append(errs, rules.ReplicasAtLeastOne(replicas, replicasPath)...)
		if replicas >= 1 {
			errs = append(errs, rules.MinAvailableWithinReplicas(group.MinAvailable, replicas, minAvailablePath, replicasPath)...)
		}
		if group.ScaleConfig != nil {
			errs = append(errs, rules.AutoScalingWithinBounds(group.ScaleConfig.MinReplicas, group.ScaleConfig.MaxReplicas,
				replicas, copsev1alpha1.ScalingGroupMinAvailable(*group), path.Child("scaleConfig"), minAvailablePath, replicasPath)...)
		}
	}
	return append(errs, rules.NoDuplicates(names, func(i int) *field.Path { return groupsPath.Index(i).Child("name") })...)
}
