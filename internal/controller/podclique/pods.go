package podclique

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// podTemplate is what every pod of one PodClique is built from.
type podTemplate struct {
	pclq  *copsev1alpha1.PodClique
	id    cliqueIdentity
	owner metav1.OwnerReference
	// gangScheduling puts the pod in the clique's PodGroup.
	gangScheduling bool
	// groupPods is GROVE_PCSG_TEMPLATE_NUM_PODS for grouped cliques.
	groupPods int32
}

// buildPod returns the pod for one index of the clique.
//
// The name is generated, so a replacement never waits for its predecessor to
// release a name; the stable identity is the hostname <podclique>-<index>
// under the replica's headless Service. Labels are the PodClique's (template
// labels under copse's) plus the clique and index labels; annotations are the
// PodClique's, minus kubectl's bookkeeping.
func buildPod(t podTemplate, index int) *corev1.Pod {
	pclq := t.pclq
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pclq.Namespace,
			GenerateName: naming.PodGenerateName(pclq.Name),
			Labels: labels.Merge(pclq.Labels, map[string]string{
				labels.PodCliqueKey: pclq.Name,
				labels.PodIndexKey:  strconv.Itoa(index),
			}),
			Annotations:     podAnnotations(pclq.Annotations),
			OwnerReferences: []metav1.OwnerReference{t.owner},
		},
		Spec: *pclq.Spec.PodSpec.DeepCopy(),
	}
	spec := &pod.Spec
	spec.Hostname = naming.PodHostname(pclq.Name, index)
	spec.Subdomain = naming.ReplicaService(t.id.podCliqueSet, t.id.replica)
	if t.gangScheduling {
		spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(t.id.gang)}
	}
	env := discoveryEnv(t.id, pclq.Name, pclq.Namespace, index, t.groupPods)
	addMissingEnv(spec.InitContainers, env)
	addMissingEnv(spec.Containers, env)
	return pod
}

func podAnnotations(pclqAnnotations map[string]string) map[string]string {
	out := maps.Clone(pclqAnnotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}
