package podcliqueset

import (
	"fmt"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
)

var startsAfterSucceededPath = specPath.Child("trainingSpec", "startsAfterSucceeded")

// validateStartsAfterSucceeded checks trainingSpec.startsAfterSucceeded
// (the CRD already limits it to Training workloads and refuses duplicate
// entries): every name is a clique of the template, no clique waits on
// itself, the cliques waited on belong to no scaling group (they are
// scheduled in a group of their own, apart from the replica's gang, and a
// scaling group's replicas are gangs), and no clique waits, through
// startsAfterSucceeded and the start order of cliqueStartupType together,
// on itself: none of the cycle could ever start.
func validateStartsAfterSucceeded(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if pcs.Spec.TrainingSpec == nil || len(pcs.Spec.TrainingSpec.StartsAfterSucceeded) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			known[clique.Name] = true
		}
	}
	grouped := map[string]string{}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, name := range group.CliqueNames {
			grouped[name] = group.Name
		}
	}
	var errs field.ErrorList
	for i, dep := range pcs.Spec.TrainingSpec.StartsAfterSucceeded {
		path := startsAfterSucceededPath.Index(i)
		if !known[dep.Clique] {
			errs = append(errs, field.Invalid(path.Child("clique"), dep.Clique, fmt.Sprintf("must name a clique of %s", cliquesPath)))
		}
		for j, name := range dep.Cliques {
			namePath := path.Child("cliques").Index(j)
			switch {
			case name == dep.Clique:
				errs = append(errs, field.Invalid(namePath, name, "a clique cannot start after its own success"))
			case !known[name]:
				errs = append(errs, field.Invalid(namePath, name, fmt.Sprintf("must name a clique of %s", cliquesPath)))
			case grouped[name] != "":
				errs = append(errs, field.Invalid(namePath, name, fmt.Sprintf(
					"must name a clique outside any scaling group (it is in %q): the cliques waited on are scheduled apart from the replica's gangs",
					grouped[name])))
			}
		}
	}
	success := blueprint.SuccessPredecessors(pcs)
	ready := blueprint.StartPredecessors(pcs.Spec.Template.StartupType, pcs.Spec.Template.Cliques)
	cycles := dependencyCycles(pcs.Spec.Template.Cliques, func(c *grovecorev1alpha1.PodCliqueTemplateSpec) []string {
		return append(slices.Clone(success[c.Name]), ready[c.Name]...)
	})
	for _, cycle := range cycles {
		if !cycle.hasEdgeIn(success) {
			continue // a startsAfter cycle alone is validateStartOrder's
		}
		errs = append(errs, field.Invalid(startsAfterSucceededPath, cycle.String(),
			"startsAfterSucceeded, with the start order of cliqueStartupType, must not form a cycle: no clique of the cycle could ever start"))
	}
	return errs
}

// hasEdgeIn reports whether some clique of the cycle waits for the next one
// through edges.
func (c startOrderCycle) hasEdgeIn(edges map[string][]string) bool {
	for i, name := range c.names {
		if slices.Contains(edges[name], c.names[(i+1)%len(c.names)]) {
			return true
		}
	}
	return false
}

// validateStartsAfterSucceededUnchanged keeps startsAfterSucceeded as it
// was created: it decides which cliques form a replica's gang, and the
// gangs of a running workload do not change.
func validateStartsAfterSucceededUnchanged(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	var before, after []copsev1alpha1.CliqueSuccessDependency
	if old.Spec.TrainingSpec != nil {
		before = old.Spec.TrainingSpec.StartsAfterSucceeded
	}
	if pcs.Spec.TrainingSpec != nil {
		after = pcs.Spec.TrainingSpec.StartsAfterSucceeded
	}
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	return field.ErrorList{field.Forbidden(startsAfterSucceededPath,
		fmt.Sprintf("is immutable when %s is %s: it decides the replicas' gangs", specPath.Child("workloadType"), copsev1alpha1.WorkloadTypeTraining))}
}
