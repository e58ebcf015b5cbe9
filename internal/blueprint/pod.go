package blueprint

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// PodContext is everything a pod of a PodClique is built from, and what
// every PodDecorator may read.
type PodContext struct {
	PodCliqueSet *copsev1alpha1.PodCliqueSet
	PodClique    *copsev1alpha1.PodClique
	Identity     CliqueIdentity
	// Index is the pod's place in the clique.
	Index int
	// Owner is the controller reference to the PodClique.
	Owner metav1.OwnerReference
	// GangPlaced: the clique was available once, or a pod of its gang in
	// the same run is bound to a node, so its gang has been placed; a pod
	// created now (a replacement, a scale-out, a clique whose pods came
	// late) joins a running workload and is placed on its own, rather than
	// waiting for gang peers that may already have ended.
	GangPlaced bool
	// StartupGate is the state the pod's startup gate starts in
	// (labels.StartupGateClosed or labels.StartupGateOpen); "" when the clique starts
	// after no other clique and its pods have no gate.
	StartupGate string
	// HoldIn are node labels the pod must be placed on, added to its node
	// selector: the base gang's domain, for a pod of a scaled gang held in
	// it (BaseGangHoldKey). Nil for other pods.
	HoldIn map[string]string
}

// Pod builds the pod for one index of a clique, before decorators.
//
// The name is generated, so a replacement never waits for its predecessor to
// release a name; the stable identity is the hostname <podclique>-<index>
// under the replica's headless Service. Labels are the PodClique's (template
// labels under copse's) plus the clique and index labels; annotations are the
// PodClique's, minus kubectl's bookkeeping. Every container gets Grove's
// discovery variables it does not set itself.
func Pod(pc PodContext) (*corev1.Pod, error) {
	pclq, id := pc.PodClique, pc.Identity
	var groupPods int32
	if id.Grouped() {
		n, err := pc.PodCliqueSet.ScalingGroupPods(id.Clique)
		if err != nil {
			return nil, fmt.Errorf("counting the pods of scaling group %s: %w", id.ScalingGroup, err)
		}
		groupPods = n
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pclq.Namespace,
			GenerateName: naming.PodGenerateName(pclq.Name),
			Labels: labels.Merge(pclq.Labels, map[string]string{
				labels.PodCliqueKey: pclq.Name,
				labels.PodIndexKey:  strconv.Itoa(pc.Index),
			}),
			Annotations:     podAnnotations(pclq.Annotations),
			OwnerReferences: []metav1.OwnerReference{pc.Owner},
		},
		Spec: *pclq.Spec.PodSpec.DeepCopy(),
	}
	if len(pc.HoldIn) > 0 {
		pod.Spec.NodeSelector = labels.Merge(pod.Spec.NodeSelector, pc.HoldIn)
	}
	pod.Spec.Hostname = naming.PodHostname(pclq.Name, pc.Index)
	pod.Spec.Subdomain = naming.ReplicaService(id.PodCliqueSet, id.Replica)
	env := discoveryEnv(id, pclq.Name, pclq.Namespace, pc.Index, groupPods)
	addMissingEnv(pod.Spec.InitContainers, env)
	addMissingEnv(pod.Spec.Containers, env)
	return pod, nil
}

func podAnnotations(pclqAnnotations map[string]string) map[string]string {
	out := maps.Clone(pclqAnnotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	// The PodClique's own bookkeeping, not the pod's.
	delete(out, labels.TemplateReplicasAnnotation)
	delete(out, labels.ReplicaDomainKeyAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}
