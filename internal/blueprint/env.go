package blueprint

import (
	"slices"
	"strconv"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/naming"
)

// discoveryEnv are the variables that tell a pod where it sits in its
// PodCliqueSet, under Grove's names so that Grove workloads run unchanged.
// groupPods is the number of pods of one scaling-group replica; it is used
// only for grouped cliques.
func discoveryEnv(id CliqueIdentity, podClique, namespace string, index int, groupPods int32) []corev1.EnvVar {
	vars := []corev1.EnvVar{
		{Name: groveconstants.EnvVarPodCliqueSetName, Value: id.PodCliqueSet},
		{Name: groveconstants.EnvVarPodCliqueSetIndex, Value: strconv.Itoa(id.Replica)},
		{Name: groveconstants.EnvVarPodCliqueName, Value: podClique},
		{Name: groveconstants.EnvVarHeadlessService, Value: naming.HeadlessServiceFQDN(naming.ReplicaService(id.PodCliqueSet, id.Replica), namespace)},
		{Name: groveconstants.EnvVarPodIndex, Value: strconv.Itoa(index)},
	}
	if id.Grouped() {
		vars = append(vars,
			corev1.EnvVar{Name: groveconstants.EnvVarPodCliqueScalingGroupName, Value: id.ScalingGroup},
			corev1.EnvVar{Name: groveconstants.EnvVarPodCliqueScalingGroupIndex, Value: strconv.Itoa(id.ScalingGroupReplica)},
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
