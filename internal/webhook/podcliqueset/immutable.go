package podcliqueset

import (
	"fmt"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// validateImmutableFields rejects changes to what Grove fixes at creation:
// the structure of each replica (which cliques and scaling groups exist, and
// their gang sizes and start order), how pods are placed (topology
// constraints, scheduler), and the shared ResourceClaims; and, of copse's
// fields, trainingSpec.successPolicy: a workload's success criteria are
// part of its definition, and a change could end a running workload, or
// take back a success already written. Pod templates and replica counts
// may change, and for Inference minAvailable too; the controllers roll them
// out. spec.suspend may change at
// any time: that is what it is for.
func validateImmutableFields(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	oldTemplate, template := &old.Spec.Template, &pcs.Spec.Template
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateImmutableField(successPolicyOf(pcs), successPolicyOf(old), successPolicyPath)...)
	errs = append(errs, apivalidation.ValidateImmutableField(template.StartupType, oldTemplate.StartupType, templatePath.Child("cliqueStartupType"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(template.TopologyConstraint, oldTemplate.TopologyConstraint, templatePath.Child("topologyConstraint"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(template.ResourceClaimTemplates, oldTemplate.ResourceClaimTemplates, templatePath.Child("resourceClaimTemplates"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(template.ResourceSharing, oldTemplate.ResourceSharing, templatePath.Child("resourceSharing"))...)
	training := pcs.IsTraining()
	errs = append(errs, validateCliquesUnchanged(oldTemplate, template, training)...)
	errs = append(errs, validateScalingGroupsUnchanged(oldTemplate, template, training)...)
	return errs
}

// validateCliquesUnchanged keeps the set of cliques, and their order when
// the start order depends on it (InOrder starts them in list order,
// Explicit's dependencies were checked against it).
func validateCliquesUnchanged(oldTemplate, template *grovecorev1alpha1.PodCliqueSetTemplateSpec, training bool) field.ErrorList {
	oldIndex := map[string]int{}
	var oldNames []string
	for i, clique := range oldTemplate.Cliques {
		if clique != nil {
			oldIndex[clique.Name] = i
			oldNames = append(oldNames, clique.Name)
		}
	}
	orderMatters := template.StartupType != nil && (*template.StartupType == grovecorev1alpha1.CliqueStartupTypeInOrder ||
		*template.StartupType == grovecorev1alpha1.CliqueStartupTypeExplicit)

	var errs field.ErrorList
	present := map[string]bool{}
	for i, clique := range template.Cliques {
		if clique == nil {
			continue
		}
		present[clique.Name] = true
		path := cliquesPath.Index(i)
		j, existed := oldIndex[clique.Name]
		if !existed {
			errs = append(errs, field.Forbidden(path.Child("name"), fmt.Sprintf(
				"cliques cannot be added or renamed after creation: %q is not one of %q", clique.Name, oldNames)))
			continue
		}
		if orderMatters && i != j {
			errs = append(errs, field.Forbidden(path.Child("name"), fmt.Sprintf(
				"cliques cannot be reordered when %s is %s: %q was at index %d",
				templatePath.Child("cliqueStartupType"), *template.StartupType, clique.Name, j)))
		}
		errs = append(errs, validateCliqueUnchanged(oldTemplate.Cliques[j], clique, path, training)...)
	}
	for _, name := range oldNames {
		if !present[name] {
			errs = append(errs, field.Forbidden(cliquesPath, fmt.Sprintf("cliques cannot be removed after creation: %q is missing", name)))
		}
	}
	return errs
}

// validateCliqueUnchanged keeps what a clique is. minAvailable may change
// for Inference: it is rolled out to the PodCliques and gangs (the
// controllers' refresh); a Training workload's gangs stay as created.
func validateCliqueUnchanged(old, clique *grovecorev1alpha1.PodCliqueTemplateSpec, path *field.Path, training bool) field.ErrorList {
	specPath := path.Child("spec")
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateImmutableField(clique.Spec.RoleName, old.Spec.RoleName, specPath.Child("roleName"))...)
	if training {
		errs = append(errs, apivalidation.ValidateImmutableField(clique.Spec.MinAvailable, old.Spec.MinAvailable, specPath.Child("minAvailable"))...)
	}
	errs = append(errs, apivalidation.ValidateImmutableField(clique.Spec.StartsAfter, old.Spec.StartsAfter, specPath.Child("startsAfter"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(clique.Spec.PodSpec.SchedulerName, old.Spec.PodSpec.SchedulerName, specPath.Child("podSpec", "schedulerName"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(clique.TopologyConstraint, old.TopologyConstraint, path.Child("topologyConstraint"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(clique.ResourceSharing, old.ResourceSharing, path.Child("resourceSharing"))...)
	return errs
}

// validateScalingGroupsUnchanged keeps the set of scaling groups and their
// members; the order of either list carries no meaning. minAvailable may
// change for Inference, as a clique's.
func validateScalingGroupsUnchanged(oldTemplate, template *grovecorev1alpha1.PodCliqueSetTemplateSpec, training bool) field.ErrorList {
	oldByName := map[string]*grovecorev1alpha1.PodCliqueScalingGroupConfig{}
	var oldNames []string
	for g := range oldTemplate.PodCliqueScalingGroupConfigs {
		group := &oldTemplate.PodCliqueScalingGroupConfigs[g]
		oldByName[group.Name] = group
		oldNames = append(oldNames, group.Name)
	}
	var errs field.ErrorList
	present := map[string]bool{}
	for g := range template.PodCliqueScalingGroupConfigs {
		group := &template.PodCliqueScalingGroupConfigs[g]
		present[group.Name] = true
		path := groupsPath.Index(g)
		old, existed := oldByName[group.Name]
		if !existed {
			errs = append(errs, field.Forbidden(path.Child("name"), fmt.Sprintf(
				"scaling groups cannot be added or renamed after creation: %q is not one of %q", group.Name, oldNames)))
			continue
		}
		if !sameMembers(old.CliqueNames, group.CliqueNames) {
			errs = append(errs, field.Invalid(path.Child("cliqueNames"), group.CliqueNames, fmt.Sprintf(
				"field is immutable: the members of a scaling group cannot change after creation (were %q)", old.CliqueNames)))
		}
		if training {
			errs = append(errs, apivalidation.ValidateImmutableField(group.MinAvailable, old.MinAvailable, path.Child("minAvailable"))...)
		}
		errs = append(errs, apivalidation.ValidateImmutableField(group.TopologyConstraint, old.TopologyConstraint, path.Child("topologyConstraint"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(group.ResourceSharing, old.ResourceSharing, path.Child("resourceSharing"))...)
	}
	for _, name := range oldNames {
		if !present[name] {
			errs = append(errs, field.Forbidden(groupsPath, fmt.Sprintf("scaling groups cannot be removed after creation: %q is missing", name)))
		}
	}
	return errs
}

func sameMembers(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func successPolicyOf(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.SuccessPolicy {
	if pcs.Spec.TrainingSpec == nil {
		return nil
	}
	return pcs.Spec.TrainingSpec.SuccessPolicy
}
