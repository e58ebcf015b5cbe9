package podclique

import (
	"fmt"
	"slices"
	"strconv"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/naming"
)

// discoveryEnv are the variables that tell a pod where it sits in its
// PodCliqueSet, under Grove's names so that Grove workloads run unchanged.
// groupPods is the number of pods of one scaling-group replica; it is used
// only for grouped cliques.
func discoveryEnv(id cliqueIdentity, podClique, namespace string, index int, groupPods int32) []corev1.EnvVar {
	vars := []corev1.EnvVar{
		{Name: groveconstants.EnvVarPodCliqueSetName, Value: id.podCliqueSet},
		{Name: groveconstants.EnvVarPodCliqueSetIndex, Value: strconv.Itoa(id.replica)},
		{Name: groveconstants.EnvVarPodCliqueName, Value: podClique},
		{Name: groveconstants.EnvVarHeadlessService, Value: naming.HeadlessServiceFQDN(naming.ReplicaService(id.podCliqueSet, id.replica), namespace)},
		{Name: groveconstants.EnvVarPodIndex, Value: strconv.Itoa(index)},
	}
	if id.grouped() {
		vars = append(vars,
			corev1.EnvVar{Name: groveconstants.EnvVarPodCliqueScalingGroupName, Value: id.scalingGroup},
			corev1.EnvVar{Name: groveconstants.EnvVarPodCliqueScalingGroupIndex, Value: strconv.Itoa(id.scalingGroupReplica)},
			corev1.EnvVar{Name: groveconstants.EnvVarPodCliqueScalingGroupTemplateNumPods, Value: strconv.Itoa(int(groupPods))},
		)
	}
	return vars
}

// addMissingEnv appends to every container each variable it does not set
// itself: a value the user chose always wins.
func addMissingEnv(containers []corev1.Container, vars []corev1.EnvVar) {
	for i := range containers {
		c := &containers[i]
		for _, v := range vars {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == v.Name }) {
				c.Env = append(c.Env, v)
			}
		}
	}
}

// scalingGroupPods is the number of pods in one replica of the scaling group
// that clique belongs to: the sum of the template replicas of the group's
// member cliques. It is read from the PodCliqueSet template, not from live
// PodCliques, so every pod of the group sees the same number regardless of
// autoscaling or creation order.
func scalingGroupPods(template grovecorev1alpha1.PodCliqueSetTemplateSpec, clique string) (int32, error) {
	for _, group := range template.PodCliqueScalingGroupConfigs {
		if !slices.Contains(group.CliqueNames, clique) {
			continue
		}
		var total int32
		for _, member := range group.CliqueNames {
			i := slices.IndexFunc(template.Cliques, func(c *grovecorev1alpha1.PodCliqueTemplateSpec) bool {
				return c != nil && c.Name == member
			})
			if i < 0 {
				return 0, fmt.Errorf("scaling group %q lists clique %q, which the PodCliqueSet template does not define", group.Name, member)
			}
			total += template.Cliques[i].Spec.Replicas
		}
		return total, nil
	}
	return 0, fmt.Errorf("no scaling group of the PodCliqueSet template contains clique %q", clique)
}
