// Package testfixtures holds the objects unit tests of several packages
// share: PodCliqueSet "llm" in namespace "ml" and two of its PodCliques. It
// is imported by tests only.
package testfixtures

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// The fixtures model PodCliqueSet "llm" in namespace "ml": replica 1 has a
// standalone clique "leader" and a scaling group "decode" of cliques
// "prefill" (2 pods) and "worker" (3 pods).
// Namespace of every fixture.
const Namespace = "ml"

// PodCliqueSet is "llm" with workload type workload.
func PodCliqueSet(workload copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	clique := func(name string, replicas int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
		return &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: replicas}}
	}
	pcs := &copsev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: Namespace, UID: "pcs-uid"},
	}
	pcs.Spec.WorkloadType = workload
	pcs.Spec.Replicas = 2
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		clique("leader", 1), clique("prefill", 2), clique("worker", 3),
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"prefill", "worker"}},
	}
	return pcs
}

// StandaloneClique is llm-1-leader with the labels the PodCliqueSet
// controller sets, a user template label and annotation, and replicas pods.
func StandaloneClique(replicas int32) *copsev1alpha1.PodClique {
	name := naming.StandalonePodClique("llm", 1, "leader")
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace, UID: "pclq-uid", Generation: 1,
			Labels: labels.Merge(map[string]string{"team": "inference", labels.PartOfKey: "user-tried-to-override"},
				labels.ForReplica("llm", 1),
				map[string]string{
					labels.ComponentKey:      labels.ComponentPodCliqueOfSet,
					labels.PodCliqueKey:      name,
					labels.CliqueTemplateKey: "leader",
					labels.PodGangKey:        naming.BaseGang("llm", 1),
				}),
			Annotations: map[string]string{
				"example.com/owner":                "team-a",
				corev1.LastAppliedConfigAnnotation: `{"huge":"json"}`,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(
				&metav1.ObjectMeta{Name: "llm", UID: "pcs-uid"}, copsev1alpha1.SchemeGroupVersion.WithKind("PodCliqueSet"))},
		},
		Spec: grovecorev1alpha1.PodCliqueSpec{
			RoleName: "leader",
			Replicas: replicas,
			PodSpec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers: []corev1.Container{
					{Name: "main", Image: "registry.example.com/llm:1", Env: []corev1.EnvVar{{Name: "GROVE_PCS_NAME", Value: "user-value"}}},
					{Name: "sidecar", Image: "registry.example.com/proxy:1"},
				},
			},
		},
	}
}

// GroupedClique is llm-1-decode-2-worker, owned by scaling group llm-1-decode.
func GroupedClique(replicas int32) *copsev1alpha1.PodClique {
	group := naming.ScalingGroup("llm", 1, "decode")
	name := naming.GroupedPodClique(group, 2, "worker")
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace, UID: types.UID("grouped-uid"), Generation: 1,
			Labels: labels.Merge(labels.ForReplica("llm", 1), map[string]string{
				labels.ComponentKey:           labels.ComponentPodCliqueOfGroup,
				labels.PodCliqueKey:           name,
				labels.CliqueTemplateKey:      "worker",
				labels.PodGangKey:             naming.ScaledGang(group, 2),
				labels.ScalingGroupKey:        group,
				labels.ScalingGroupReplicaKey: "2",
			}),
		},
		Spec: grovecorev1alpha1.PodCliqueSpec{
			RoleName: "worker", Replicas: replicas, MinAvailable: ptr.To[int32](1),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/llm:1"}}},
		},
	}
}
