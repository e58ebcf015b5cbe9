package podcliqueset

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
)

// ValidateNames returns the rules of names that pcs breaks: the rules of
// every name copse derives from the PodCliqueSet's own, which a shorter name
// can fix. Its name must be a DNS-1035 label (validateName), its pod
// hostnames and PodClique names must fit a DNS label
// (validateGeneratedNames), and so must its ComputeDomains' names
// (validateComputeDomainNames). ValidateCreate and ValidateMNNVL apply each
// of them; the TrainJob webhook applies them all to the PodCliqueSet a
// TrainJob would get (MaxNameLength), so that the two webhooks can never
// disagree about a name.
func ValidateNames(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	errs := validateName(pcs.Name)
	errs = append(errs, validateGeneratedNames(pcs)...)
	return append(errs, validateComputeDomainNames(pcs)...)
}

// MaxNameLength is the longest name pcs could have, its spec as it is,
// without breaking ValidateNames: found by trying the rules themselves on
// names of every length from the longest label down, so it holds whatever
// those rules become. 0 when no name fits (a clique name too long on its
// own).
func MaxNameLength(pcs *copsev1alpha1.PodCliqueSet) int {
	probe := pcs.DeepCopy()
	for n := naming.MaxLabelLength; n > 0; n-- {
		probe.Name = strings.Repeat("a", n)
		if len(ValidateNames(probe)) == 0 {
			return n
		}
	}
	return 0
}

// validateGeneratedNames rejects a PodCliqueSet whose longest generated pod
// hostname would not fit in a DNS label, so that the problem shows when the
// object is applied rather than as pods that can never be created.
//
// The error is reported at the clique whose hostnames are too long, unless
// even a one-character clique name would not fit: then only a shorter
// PodCliqueSet name helps, and the error is at metadata.name.
func validateGeneratedNames(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	budget := nameBudget(pcs)
	if len(budget.Cliques) == 0 {
		return nil
	}
	err := budget.Check()
	if err == nil {
		return nil
	}
	hostname, clique := budget.LongestHostname()
	excess := len(hostname) - naming.MaxLabelLength
	if excess >= len(clique) {
		return field.ErrorList{field.Invalid(metadataNamePath, pcs.Name, err.Error())}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Name == clique {
			return field.ErrorList{field.Invalid(cliquesPath.Index(i).Child("name"), clique, err.Error())}
		}
	}
	return field.ErrorList{field.Invalid(metadataNamePath, pcs.Name, err.Error())}
}

// nameBudget describes the largest names pcs may generate: its replica
// count, and each scaling group at the most replicas its autoscaler allows.
// Cliques without a name are left out; validateCliques reports them.
func nameBudget(pcs *copsev1alpha1.PodCliqueSet) naming.NameBudget {
	budget := naming.NameBudget{
		PodCliqueSet:     pcs.Name,
		MaxReplicas:      max(int(pcs.Spec.Replicas), 1),
		Cliques:          map[string]string{},
		MaxGroupReplicas: map[string]int{},
	}
	groupOf := scalingGroupOfClique(pcs)
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil && clique.Name != "" {
			budget.Cliques[clique.Name] = groupOf[clique.Name]
		}
	}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		most := int(copsev1alpha1.ScalingGroupReplicas(group))
		if group.ScaleConfig != nil {
			most = max(most, int(group.ScaleConfig.MaxReplicas))
		}
		budget.MaxGroupReplicas[group.Name] = most
	}
	return budget
}
