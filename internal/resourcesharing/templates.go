package resourcesharing

import (
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// External holds the specs of the ResourceClaimTemplate objects a
// PodCliqueSet's references resolve to, by namespace and name.
type External map[types.NamespacedName]resourcev1.ResourceClaimSpec

// References are the resourceSharing entries of every level of pcs, in
// template order: the PodCliqueSet's, each clique's, each scaling group's.
func References(pcs *copsev1alpha1.PodCliqueSet) []grovecorev1alpha1.ResourceSharingSpec {
	t := &pcs.Spec.Template
	var out []grovecorev1alpha1.ResourceSharingSpec
	for _, ref := range t.ResourceSharing {
		out = append(out, ref.ResourceSharingSpec)
	}
	for _, clique := range t.Cliques {
		if clique != nil {
			out = append(out, clique.ResourceSharing...)
		}
	}
	for _, group := range t.PodCliqueScalingGroupConfigs {
		for _, ref := range group.ResourceSharing {
			out = append(out, ref.ResourceSharingSpec)
		}
	}
	return out
}

// ExternalTemplates are the ResourceClaimTemplate objects the references of
// pcs need, sorted and without duplicates: those that name no template of
// spec.template.resourceClaimTemplates, and those with a namespace (an
// internal template never has one). An empty namespace is the
// PodCliqueSet's.
func ExternalTemplates(pcs *copsev1alpha1.PodCliqueSet) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range References(pcs) {
		if _, internal := internalTemplate(pcs, ref); internal {
			continue
		}
		key := externalKey(pcs, ref)
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Resolve returns the claim spec a reference stands for, as Grove resolves
// it: the PodCliqueSet's own template of that name when the reference has no
// namespace (an internal template shadows an object of the same name), else
// the ResourceClaimTemplate object in the reference's namespace or, without
// one, the PodCliqueSet's. ok is false when that object is not in external.
func Resolve(pcs *copsev1alpha1.PodCliqueSet, ref grovecorev1alpha1.ResourceSharingSpec, external External) (spec resourcev1.ResourceClaimSpec, ok bool) {
	if spec, internal := internalTemplate(pcs, ref); internal {
		return spec, true
	}
	spec, ok = external[externalKey(pcs, ref)]
	return spec, ok
}

func internalTemplate(pcs *copsev1alpha1.PodCliqueSet, ref grovecorev1alpha1.ResourceSharingSpec) (resourcev1.ResourceClaimSpec, bool) {
	if ref.Namespace != "" {
		return resourcev1.ResourceClaimSpec{}, false
	}
	for _, t := range pcs.Spec.Template.ResourceClaimTemplates {
		if t.Name == ref.Name {
			return t.TemplateSpec.Spec, true
		}
	}
	return resourcev1.ResourceClaimSpec{}, false
}

func externalKey(pcs *copsev1alpha1.PodCliqueSet, ref grovecorev1alpha1.ResourceSharingSpec) types.NamespacedName {
	namespace := ref.Namespace
	if namespace == "" {
		namespace = pcs.Namespace
	}
	return types.NamespacedName{Namespace: namespace, Name: ref.Name}
}
