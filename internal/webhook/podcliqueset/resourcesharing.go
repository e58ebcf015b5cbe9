package podcliqueset

import (
	"fmt"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// validateResourceSharing checks the dynamic-resource fields: the
// ResourceClaim templates the PodCliqueSet defines, and the references that
// share claims at the PodCliqueSet, scaling-group and clique levels.
func validateResourceSharing(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	template := &pcs.Spec.Template
	errs, templateNames := validateResourceClaimTemplates(template.ResourceClaimTemplates)

	setPath := templatePath.Child("resourceSharing")
	for i := range template.ResourceSharing {
		ref := &template.ResourceSharing[i]
		errs = append(errs, validateSharingFilter(ref.Filter, setPath.Index(i).Child("filter"), pcs)...)
	}
	errs = append(errs, validateSharingReferences(sharingSpecs(template.ResourceSharing, pcsSharingBase), setPath, templateNames)...)

	for i, clique := range template.Cliques {
		if clique != nil {
			errs = append(errs, validateSharingReferences(clique.ResourceSharing, cliquesPath.Index(i).Child("resourceSharing"), templateNames)...)
		}
	}
	for g := range template.PodCliqueScalingGroupConfigs {
		group := &template.PodCliqueScalingGroupConfigs[g]
		groupSharingPath := groupsPath.Index(g).Child("resourceSharing")
		for i := range group.ResourceSharing {
			errs = append(errs, validateGroupSharingFilter(group.ResourceSharing[i].Filter, groupSharingPath.Index(i).Child("filter"), group)...)
		}
		errs = append(errs, validateSharingReferences(sharingSpecs(group.ResourceSharing, pcsgSharingBase), groupSharingPath, templateNames)...)
	}
	return errs
}

// validateResourceClaimTemplates checks the templates and returns their names.
func validateResourceClaimTemplates(templates []grovecorev1alpha1.ResourceClaimTemplateConfig) (field.ErrorList, map[string]bool) {
	path := templatePath.Child("resourceClaimTemplates")
	var errs field.ErrorList
	names := make([]string, len(templates))
	known := map[string]bool{}
	for i := range templates {
		claimTemplate := &templates[i]
		names[i] = claimTemplate.Name
		known[claimTemplate.Name] = true
		if claimTemplate.Name == "" {
			errs = append(errs, field.Required(path.Index(i).Child("name"), "a ResourceClaim template needs a name to be referenced by"))
		}
		if len(claimTemplate.TemplateSpec.Spec.Devices.Requests) == 0 {
			errs = append(errs, field.Required(path.Index(i).Child("templateSpec", "spec", "devices", "requests"),
				"a ResourceClaim template must request at least one device"))
		}
	}
	errs = append(errs, rules.NoDuplicates(names, func(i int) *field.Path { return path.Index(i).Child("name") })...)
	return errs, known
}

// validateSharingReferences checks one list of shared-claim references.
func validateSharingReferences(refs []grovecorev1alpha1.ResourceSharingSpec, path *field.Path, templateNames map[string]bool) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, len(refs))
	for i := range refs {
		ref := &refs[i]
		names[i] = ref.Name
		if ref.Name == "" {
			errs = append(errs, field.Required(path.Index(i).Child("name"), "must name a ResourceClaim template"))
		}
		if ref.Namespace != "" && templateNames[ref.Name] {
			errs = append(errs, field.Invalid(path.Index(i).Child("namespace"), ref.Namespace, fmt.Sprintf(
				"must be empty: %q is one of %s, which live in the PodCliqueSet's namespace", ref.Name, templatePath.Child("resourceClaimTemplates"))))
		}
	}
	return append(errs, rules.NoDuplicates(names, func(i int) *field.Path { return path.Index(i).Child("name") })...)
}

// validateSharingFilter checks that a PodCliqueSet-level filter selects at
// least one child, and only children that exist.
func validateSharingFilter(filter *grovecorev1alpha1.PCSResourceSharingFilter, path *field.Path, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if filter == nil {
		return nil
	}
	if len(filter.ChildCliqueNames) == 0 && len(filter.ChildScalingGroupNames) == 0 {
		return field.ErrorList{field.Required(path, "must list at least one of childCliqueNames and childScalingGroupNames")}
	}
	cliques, groups := map[string]bool{}, map[string]bool{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			cliques[clique.Name] = true
		}
	}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		groups[group.Name] = true
	}
	var errs field.ErrorList
	for i, name := range filter.ChildCliqueNames {
		if !cliques[name] {
			errs = append(errs, field.Invalid(path.Child("childCliqueNames").Index(i), name, fmt.Sprintf("must name a clique of %s", cliquesPath)))
		}
	}
	for i, name := range filter.ChildScalingGroupNames {
		if !groups[name] {
			errs = append(errs, field.Invalid(path.Child("childScalingGroupNames").Index(i), name, fmt.Sprintf("must name a scaling group of %s", groupsPath)))
		}
	}
	return errs
}

// validateGroupSharingFilter checks that a scaling-group filter selects at
// least one clique, and only cliques of that group.
func validateGroupSharingFilter(filter *grovecorev1alpha1.PCSGResourceSharingFilter, path *field.Path,
	group *grovecorev1alpha1.PodCliqueScalingGroupConfig) field.ErrorList {
	if filter == nil {
		return nil
	}
	if len(filter.ChildCliqueNames) == 0 {
		return field.ErrorList{field.Required(path.Child("childCliqueNames"), "must list at least one clique of the scaling group")}
	}
	members := map[string]bool{}
	for _, clique := range group.CliqueNames {
		members[clique] = true
	}
	var errs field.ErrorList
	for i, name := range filter.ChildCliqueNames {
		if !members[name] {
			errs = append(errs, field.Invalid(path.Child("childCliqueNames").Index(i), name,
				fmt.Sprintf("must be one of the scaling group's cliqueNames %q", group.CliqueNames)))
		}
	}
	return errs
}

func pcsSharingBase(ref grovecorev1alpha1.PCSResourceSharingSpec) grovecorev1alpha1.ResourceSharingSpec {
	return ref.ResourceSharingSpec
}

func pcsgSharingBase(ref grovecorev1alpha1.PCSGResourceSharingSpec) grovecorev1alpha1.ResourceSharingSpec {
	return ref.ResourceSharingSpec
}

// sharingSpecs extracts the common part of each reference, so that the
// three levels share validateSharingReferences.
func sharingSpecs[T any](refs []T, base func(T) grovecorev1alpha1.ResourceSharingSpec) []grovecorev1alpha1.ResourceSharingSpec {
	specs := make([]grovecorev1alpha1.ResourceSharingSpec, len(refs))
	for i, ref := range refs {
		specs[i] = base(ref)
	}
	return specs
}
