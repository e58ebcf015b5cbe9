package podcliqueset

import (
	"fmt"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

// supportedRestartPolicies are the pod restart policies a clique may use,
// as in Grove. With Always the kubelet restarts every exited container, with
// Never the operator decides what an exited pod means; OnFailure would split
// that decision between the two by exit code.
var supportedRestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyNever}

// validateCliques checks the clique list and each clique's own fields. old
// is the stored object on update, nil on create.
func validateCliques(pcs, old *copsev1alpha1.PodCliqueSet) field.ErrorList {
	cliques := pcs.Spec.Template.Cliques
	if len(cliques) == 0 {
		return field.ErrorList{field.Required(cliquesPath, "at least one clique is required")}
	}
	groupOf := scalingGroupOfClique(pcs)
	var errs field.ErrorList
	names := make([]string, len(cliques))
	roles := make([]string, len(cliques))
	for i, clique := range cliques {
		path := cliquesPath.Index(i)
		if clique == nil {
			errs = append(errs, field.Required(path, "must be a clique, not null"))
			continue
		}
		names[i], roles[i] = clique.Name, clique.Spec.RoleName
		errs = append(errs, rules.DNSLabel(clique.Name, path.Child("name"))...)
		errs = append(errs, metav1validation.ValidateLabels(clique.Labels, path.Child("labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(clique.Annotations, path.Child("annotations"))...)
		errs = append(errs, validateCliqueSpec(&clique.Spec, storedPodSpec(old, clique.Name), path.Child("spec"))...)
		if group, grouped := groupOf[clique.Name]; grouped && clique.Spec.ScaleConfig != nil {
			errs = append(errs, field.Forbidden(path.Child("spec", "autoScalingConfig"), fmt.Sprintf(
				"not allowed on a clique of scaling group %q, which scales its cliques together; set scaleConfig on the group instead", group)))
		}
	}
	errs = append(errs, rules.NoDuplicates(names, func(i int) *field.Path { return cliquesPath.Index(i).Child("name") })...)
	errs = append(errs, rules.NoDuplicates(roles, func(i int) *field.Path { return cliquesPath.Index(i).Child("spec", "roleName") })...)
	errs = append(errs, validateSchedulerNames(cliques)...)
	return errs
}

func validateCliqueSpec(spec *grovecorev1alpha1.PodCliqueSpec, storedPodSpec *corev1.PodSpec, path *field.Path) field.ErrorList {
	replicasPath, minAvailablePath := path.Child("replicas"), path.Child("minAvailable")
	errs := rules.ReplicasAtLeastOne(spec.Replicas, replicasPath)
	if spec.Replicas >= 1 {
		errs = append(errs, rules.MinAvailableWithinReplicas(spec.MinAvailable, spec.Replicas, minAvailablePath, replicasPath)...)
	}
	if spec.ScaleConfig != nil {
		minAvailable := copsev1alpha1.CliqueMinAvailable(*spec)
		errs = append(errs, rules.AutoScalingWithinBounds(spec.ScaleConfig.MinReplicas, spec.ScaleConfig.MaxReplicas,
			spec.Replicas, minAvailable, path.Child("autoScalingConfig"), minAvailablePath, replicasPath)...)
	}
	return append(errs, validatePodSpec(&spec.PodSpec, storedPodSpec, path.Child("podSpec"))...)
}

// validatePodSpec checks only what copse needs of a pod template; the rest
// is the API server's pod validation when the pods are created. stored is
// the clique's pod template before an update, nil on create.
func validatePodSpec(spec, stored *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.RestartPolicy != "" && !slices.Contains(supportedRestartPolicies, spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, supportedRestartPolicies))
	}
	// Placement belongs to the gang scheduler. Grove checks these on create
	// only; here an update may keep a value already stored but not set one.
	if spec.NodeName != "" && (stored == nil || stored.NodeName != spec.NodeName) {
		errs = append(errs, field.Forbidden(path.Child("nodeName"),
			"must not be set: it bypasses the scheduler, which places each replica's pods as one gang"))
	}
	if len(spec.TopologySpreadConstraints) > 0 &&
		(stored == nil || !equality.Semantic.DeepEqual(stored.TopologySpreadConstraints, spec.TopologySpreadConstraints)) {
		errs = append(errs, field.Forbidden(path.Child("topologySpreadConstraints"),
			"must not be set: placement is given by topologyConstraint, which the gang scheduler honours"))
	}
	return errs
}

// storedPodSpec returns the pod template of the clique named name in old,
// or nil when old is nil or has no such clique.
func storedPodSpec(old *copsev1alpha1.PodCliqueSet, name string) *corev1.PodSpec {
	if old == nil {
		return nil
	}
	for _, clique := range old.Spec.Template.Cliques {
		if clique != nil && clique.Name == name {
			return &clique.Spec.PodSpec
		}
	}
	return nil
}

// validateSchedulerNames requires one scheduler for all pods, since a gang
// is placed by a single scheduler. An empty name means the default one.
func validateSchedulerNames(cliques []*grovecorev1alpha1.PodCliqueTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	first, firstIndex := "", -1
	for i, clique := range cliques {
		if clique == nil {
			continue
		}
		name := clique.Spec.PodSpec.SchedulerName
		if name == "" {
			name = corev1.DefaultSchedulerName
		}
		if firstIndex < 0 {
			first, firstIndex = name, i
			continue
		}
		if name != first {
			errs = append(errs, field.Invalid(cliquesPath.Index(i).Child("spec", "podSpec", "schedulerName"), name,
				fmt.Sprintf("must be the same for every clique (%s is %q): one scheduler places the whole gang",
					cliquesPath.Index(firstIndex).Child("spec", "podSpec", "schedulerName"), first)))
		}
	}
	return errs
}

// scalingGroupOfClique maps each clique named by a scaling group to the
// first group naming it.
func scalingGroupOfClique(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	groupOf := map[string]string{}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, clique := range group.CliqueNames {
			if _, taken := groupOf[clique]; !taken {
				groupOf[clique] = group.Name
			}
		}
	}
	return groupOf
}
